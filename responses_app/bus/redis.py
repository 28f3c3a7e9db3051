"""The production event bus on Redis Streams: one stream per response.

Entry ids are `1-<last sequence number in the entry>`, so `starting_after=N` is a cursor
(`XREAD` from `1-N`) and a second writer's `XADD` of an id at or below the top fails: a
zombie run cannot interleave events. An error that ended a run before it started is the
entry `0-1`; an end without events (a run cancelled or failed before its first event, or
with nothing left open) is the entry `2-0`, above every event. Streams expire (PEXPIRE) `retention_seconds` after their last entry.

Writers coalesce under load: an entry written while a flush is in flight or others wait
gathers with them for up to `flush_interval` (entries of a stream become one Redis entry),
and all pending streams go out in one script call (APPEND_SCRIPT: an XADD per stream, and
its PEXPIRE when due); an entry alone goes out at once, as do urgent ones (the start, the
first text, the end). Readers share one multiplexed XREAD per process, which waits
`read_coalesce` between reads only while several streams are writing.
Each Redis entry carries the time it was written (`t`, Unix milliseconds): one small field
per write, read only by the admin's event view.
"""
import asyncio
import logging
import os
from functools import cached_property

import orjson
import redis
import redis.asyncio as aioredis
from redis.exceptions import ResponseError

from ..errors import error_body
from .entries import Entry, RetainedLog, StreamFenced, error_entry, now_ms
from .subscription import Subscription

log = logging.getLogger(__name__)

KEY_PREFIX = "gw:events:"
ERROR_ENTRY_ID = "0-1"
END_MARKER_ID = "2-0"
READ_BLOCK_MS = 30_000
RETAINED_READ_LIMIT = 10_000  # entries the admin reads of one stream at most
REFUSED_ID = "equal or smaller than the target stream top item"  # XADD's error for that
# A new reader's first entries come from a blocking XREAD of its stream alone, on a
# connection of its own: they reach it at once, not at the shared read's next turn (which
# may be waiting for entries to gather). At most FIRST_READS at once per process; a
# stream beyond that, or silent for FIRST_READ_BLOCK_MS, is served by the shared read.
FIRST_READS = 32
FIRST_READ_BLOCK_MS = 1_000


# One flush of a process's pending entries: for each stream (KEYS[i]), ARGV holds its
# entry id, the TTL to set in ms (0: leave it), its number of fields, then the fields.
# A refused XADD (an id at or below the top: another writer's stream) is that stream's
# error, the others go on. One command instead of a pipeline of one or two per stream: the
# client's cost of a command (packing, a reply to await and parse) is paid once per flush.
APPEND_SCRIPT = """
local results = {}
local at = 1
for i, key in ipairs(KEYS) do
    local id, ttl, fields = ARGV[at], tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2])
    local added = redis.pcall('XADD', key, id, unpack(ARGV, at + 3, at + 2 + 2 * fields))
    at = at + 3 + 2 * fields
    if type(added) == 'table' and added.err then
        results[i] = added.err
    else
        if ttl > 0 then
            redis.call('PEXPIRE', key, ttl)
        end
        results[i] = 1
    end
end
return results
"""


def _client(url: str) -> aioredis.Redis:
    """A client whose callers wait for a free connection rather than fail."""
    pool = aioredis.BlockingConnectionPool.from_url(url, max_connections=64, timeout=20,
                                                     socket_timeout=10, socket_connect_timeout=5)
    return aioredis.Redis(connection_pool=pool)


def stream_key(response_id: str) -> str:
    return KEY_PREFIX + response_id


def encode(entry: Entry) -> dict:
    written_at = now_ms()
    if entry.error is not None:
        return {"x": orjson.dumps(entry.error), "t": written_at}
    fields = {"f": entry.first, "d": entry.data, "t": written_at}
    if entry.end:
        fields["e"] = 1
    return fields


def entry_id_of(entry: Entry) -> str:
    if entry.error is not None:
        return ERROR_ENTRY_ID
    if entry.first > entry.last:
        return END_MARKER_ID
    return f"1-{entry.last}"


def decode(entry_id: bytes, fields: dict) -> Entry:
    if b"x" in fields:
        error = orjson.loads(fields[b"x"])
        return Entry(first=-1, last=-1, data=b"", end=True, error=error)
    if entry_id.startswith(b"2-"):
        first = int(fields[b"f"])
        return Entry(first=first, last=first - 1, data=b"", end=True)
    last = int(entry_id.split(b"-", 1)[1])
    return Entry(first=int(fields[b"f"]), last=last, data=fields[b"d"], end=b"e" in fields)


class RedisEventBus:
    def __init__(self, url: str, *, retention_seconds: int, run_deadline_seconds: int,
                 flush_interval: float, read_coalesce: float = 0.0):
        self.url = url
        self.retention_ms = retention_seconds * 1000
        self.running_ttl_ms = (run_deadline_seconds + retention_seconds) * 1000
        self.flush_interval = flush_interval
        self.read_coalesce = read_coalesce
        self._writers: dict = {}  # event loop -> _StreamWriter
        self._hubs: dict = {}     # event loop -> _ReadHub

    # --- reading whole (the admin's event view, sync) -----------------------------------------
    def read_retained(self, response_id: str) -> RetainedLog | None:
        """The whole stream of a response with its write times while Redis keeps it, or None."""
        with self._sync_client.pipeline(transaction=False) as pipe:
            pipe.xrange(stream_key(response_id), "-", "+", count=RETAINED_READ_LIMIT)
            pipe.pttl(stream_key(response_id))
            raw, ttl_ms = pipe.execute()
        if not raw:
            return None
        entries = []
        for entry_id, fields in raw:
            entry = decode(entry_id, fields)
            entry.at = int(fields[b"t"]) / 1000 if b"t" in fields else None
            entries.append(entry)
        return RetainedLog(entries, ttl_ms / 1000 if ttl_ms > 0 else None)

    # --- writing (the run's loop) --------------------------------------------------------------
    def writer(self, response_id: str) -> "RedisLogWriter":
        loop = asyncio.get_running_loop()
        shared = self._writers.get(loop)
        if shared is None:
            shared = self._writers[loop] = _StreamWriter(self)
        return RedisLogWriter(shared, response_id)

    # --- deleting (any thread, sync) -----------------------------------------------------------
    def delete(self, *response_ids: str) -> None:
        """Drop these responses' event streams (a deleted or pruned response).

        Redis unreachable: logged, not raised; the streams expire with their TTL anyway."""
        if not response_ids:
            return
        try:
            self._sync_client.delete(*[stream_key(response_id) for response_id in response_ids])
        except redis.RedisError as exc:
            log.warning("could not delete %d event streams: %s", len(response_ids), exc)

    @cached_property
    def _sync_client(self) -> redis.Redis:
        """For the sync callers, off the hot path (the admin, deletion, the watchdog)."""
        return redis.Redis.from_url(self.url, socket_timeout=10, socket_connect_timeout=5)

    # --- reading (the web's loop) --------------------------------------------------------------
    async def subscribe(self, response_id: str, after: int = -1) -> Subscription:
        loop = asyncio.get_running_loop()
        hub = self._hubs.get(loop)
        if hub is None:
            hub = self._hubs[loop] = _ReadHub(self)
        return await hub.subscribe(response_id, after)

    async def retained(self, response_id: str) -> bool:
        """Whether the response's events are still kept (they expire after the run)."""
        loop = asyncio.get_running_loop()
        hub = self._hubs.get(loop)
        if hub is None:
            hub = self._hubs[loop] = _ReadHub(self)
        return bool(await hub.client.exists(stream_key(response_id)))

    # --- sync access, off the hot path (the watchdog, cancelling a queued run) -----------------
    def append_now(self, response_id: str, entry: Entry) -> bool:
        """Append one entry at once; False if the stream refused it (another writer won)."""
        key = stream_key(response_id)
        pipe = self._sync_client.pipeline(transaction=False)
        pipe.xadd(key, encode(entry), id=entry_id_of(entry))
        pipe.pexpire(key, self.retention_ms if entry.end else self.running_ttl_ms)
        added, _ = pipe.execute(raise_on_error=False)
        if isinstance(added, ResponseError):
            return False
        if isinstance(added, Exception):
            raise added
        return True


class RedisLogWriter:
    """The run's handle on one response's stream."""

    def __init__(self, shared: "_StreamWriter", response_id: str):
        self.shared = shared
        self.key = stream_key(response_id)

    async def append(self, entry: Entry, urgent: bool = False) -> None:
        await self.shared.append(self.key, entry, urgent or entry.end)

    async def close(self) -> None:
        self.shared.fenced.discard(self.key)
        self.shared.broken.pop(self.key, None)


class _StreamWriter:
    """All writes of one event loop: pending entries per stream, sent by one flusher.

    One flush is in flight at a time (a stream's entries reach Redis in order). An entry
    that finds nothing pending and no flush in flight goes out at once; entries that find
    a flush in flight, or entries already waiting, gather for up to `flush_interval`
    (batching under load only). An urgent entry starts a flush at once, or right after
    the one in flight, and its writer waits for the flush that carried it. Waiting on
    that flush's outcome, not on a lock, keeps an urgent entry from queueing behind
    every other flush of a busy loop.
    """

    def __init__(self, bus: RedisEventBus):
        self.bus = bus
        self.client = _client(bus.url)
        self.append_script = self.client.register_script(APPEND_SCRIPT)
        self.pending: dict[str, Entry] = {}
        self.waiting: list[tuple[str, asyncio.Future]] = []  # urgent writers, by stream
        self.fenced: set[str] = set()
        self.broken: dict[str, Exception] = {}  # stream -> why its last flush failed
        self.flushing = False  # the flusher task is running
        self.due = False       # flush the pending entries without waiting for the timer
        self.timer: asyncio.TimerHandle | None = None

    async def append(self, key: str, entry: Entry, urgent: bool) -> None:
        if key in self.fenced:
            raise StreamFenced(key)
        if key in self.broken:  # a background flush of this stream failed: tell the run
            raise self.broken.pop(key)
        previous = self.pending.get(key)
        self.pending[key] = entry if previous is None else previous.merged(entry)
        if not urgent:
            if self.timer is None and not self.flushing:
                self._flush_due()  # nothing pending or in flight: no one to wait for
            return
        sent = asyncio.get_running_loop().create_future()
        self.waiting.append((key, sent))
        self._flush_due()
        await sent  # raises what stopped the flush that carried this entry
        if key in self.fenced:
            raise StreamFenced(key)

    def _flush_due(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.due = True
        if not self.flushing:
            self.flushing = True
            asyncio.ensure_future(self._flusher())

    async def _flusher(self) -> None:
        """Send flushes while one is due; leave a timer for entries still pending."""
        try:
            while self.due and self.pending:
                self.due = False
                batch, self.pending = self.pending, {}
                waiting, self.waiting = self.waiting, []
                failures = await self._send(batch)
                for key, sent in waiting:
                    if sent.done():  # its writer was cancelled meanwhile
                        continue
                    if key in failures:
                        self.broken.pop(key, None)  # this run hears it now
                        sent.set_exception(failures[key])
                    else:
                        sent.set_result(None)
        finally:
            self.flushing = False
            self.due = False
            if self.pending and self.timer is None:
                self.timer = asyncio.get_running_loop().call_later(self.bus.flush_interval,
                                                                   self._flush_due)

    async def _send(self, batch: dict[str, Entry]) -> dict[str, Exception]:
        """One script call for the batch; the streams whose write failed, with the failure
        (also kept in `broken`, for writers that did not wait). Refused writes fence."""
        keys, args = list(batch), []
        for entry in batch.values():
            ttl = 0
            if entry.end:
                ttl = self.bus.retention_ms
            elif entry.first == 0:
                ttl = self.bus.running_ttl_ms
            fields = encode(entry)
            args += (entry_id_of(entry), ttl, len(fields))
            for name, value in fields.items():
                args += (name, value)
        failures = {}
        try:
            results = await self.append_script(keys=keys, args=args)
        except Exception as exc:  # Redis unreachable: every run in the batch must know
            log.warning("event stream flush failed: %s", exc)
            failures = dict.fromkeys(batch, exc)
        else:
            for key, result in zip(keys, results):
                if result == 1:
                    continue
                error = result.decode(errors="replace")
                if REFUSED_ID in error:  # another writer owns the stream
                    log.warning("event stream %s refused a write: %s", key, error)
                    self.fenced.add(key)
                else:
                    failures[key] = ResponseError(error)
        self.broken.update(failures)
        return failures


class _ReadHub:
    """One blocking XREAD over every stream this process relays, fanned out to readers;
    and for a new reader, a read of its stream alone until its first entries arrive."""

    def __init__(self, bus: RedisEventBus):
        self.bus = bus
        self.client = _client(bus.url)
        # the one blocking XREAD: no socket timeout (it blocks up to READ_BLOCK_MS)
        self.reader = aioredis.Redis.from_url(bus.url, socket_timeout=None,
                                              socket_connect_timeout=5)
        self.first_reader = aioredis.Redis.from_url(bus.url, socket_timeout=None,
                                                    socket_connect_timeout=5)
        self.first_reads: dict[Subscription, asyncio.Task] = {}
        self.wake_key = f"gw:wake:{os.getpid()}:{os.urandom(4).hex()}"
        self.wake_id = b"0-0"
        self.subscribers: dict[str, set[Subscription]] = {}
        self.task: asyncio.Task | None = None
        # A new stream joins at the next XREAD. Only a subscribe during a blocking XREAD
        # must wake it (a wake entry), and one wake per XREAD serves every such subscribe.
        self.reading = False
        self.woken = False

    async def subscribe(self, response_id: str, after: int) -> Subscription:
        key = stream_key(response_id)
        subscription = Subscription(response_id, after, on_close=self._unsubscribe)
        subscription.key = key
        self.subscribers.setdefault(key, set()).add(subscription)
        if len(self.first_reads) < FIRST_READS:
            self.first_reads[subscription] = asyncio.ensure_future(
                self._read_first(subscription))
        if self.task is None or self.task.done():
            self.task = asyncio.ensure_future(self._read_forever())
        elif self.reading and not self.woken:
            self.woken = True
            try:
                await self.client.xadd(self.wake_key, {"w": 1}, maxlen=16, approximate=True)
            except BaseException:
                self.woken = False  # the next subscribe tries again
                raise
        return subscription

    async def _read_first(self, subscription: Subscription) -> None:
        """Deliver the stream's next entries as soon as they are written (once)."""
        cursor = "0-0" if subscription.cursor < 0 else f"1-{subscription.cursor}"
        try:
            reply = await self.first_reader.xread({subscription.key: cursor},
                                                  block=FIRST_READ_BLOCK_MS)
        except Exception as exc:  # the shared read serves the stream (and reports failures)
            log.debug("first read of %s failed: %s", subscription.key, exc)
            return
        finally:
            self.first_reads.pop(subscription, None)
        for _, entries in reply or ():
            for entry_id, fields in entries:
                subscription.deliver(decode(entry_id, fields))  # the cursor drops repeats

    def _unsubscribe(self, subscription: Subscription) -> None:
        first_read = self.first_reads.pop(subscription, None)
        if first_read is not None:
            first_read.cancel()
        group = self.subscribers.get(subscription.key)
        if group is not None:
            group.discard(subscription)
            if not group:
                del self.subscribers[subscription.key]

    def _cursor(self, key: str) -> str:
        lowest = min(s.cursor for s in self.subscribers[key])
        return "0-0" if lowest < 0 else f"1-{lowest}"

    async def _read_forever(self) -> None:
        try:
            await self.client.expire(self.wake_key, 24 * 3600)
            while self.subscribers:
                streams = {self.wake_key: self.wake_id}
                for key in self.subscribers:
                    streams[key] = self._cursor(key)
                self.reading, self.woken = True, False
                try:
                    reply = await self.reader.xread(streams, block=READ_BLOCK_MS)
                finally:
                    self.reading = False
                delivered = 0  # streams that had entries
                for raw_key, entries in reply or ():
                    key = raw_key.decode()
                    if key == self.wake_key:
                        self.wake_id = entries[-1][0]
                        continue
                    delivered += 1
                    for subscription in list(self.subscribers.get(key, ())):
                        for entry_id, fields in entries:
                            subscription.deliver(decode(entry_id, fields))
                if delivered > 1 and self.bus.read_coalesce:
                    # under load (several streams wrote meanwhile): let entries of other
                    # streams gather, so that the next XREAD serves many (what this one
                    # brought is delivered already); one stream alone is read at once
                    await asyncio.sleep(self.bus.read_coalesce)
        except Exception as exc:  # Redis gone: every reader gets the failure
            log.error("event stream reader failed: %s", exc)
            failure = error_entry(503, error_body(
                "The event stream is unavailable; retry shortly.", "server_error", None,
                "service_unavailable"))
            for group in self.subscribers.values():
                for subscription in group:
                    subscription.put(failure)
            self.subscribers.clear()
