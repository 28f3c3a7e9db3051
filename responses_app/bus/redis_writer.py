"""The run side of the Redis bus: all writes of one event loop, sent by one flusher.

Writers coalesce: all pending streams go out in one script call (redis_append.py: an XADD
per stream, and its PEXPIRE when due), entries of a stream written meanwhile as one Redis
entry. With a tick (STREAM_FLUSH_TICK_MS, default 20 ms) a loop's flushes start at least a
tick apart: an entry waits for the first flush that starts a tick after the last one did,
with whatever its loop's other runs write meanwhile (at once if that was a tick or more
ago: a lone stream as slow as the tick waits for nothing), so no entry waits more than a
tick (and the flush in flight, if it takes longer). Without one (0), an entry that finds
nothing in flight goes at once and entries written during a flight gather for up to
`flush_interval` after it. Urgent entries (the end, whose writer waits for it) and soon
ones (the first text, whose writer goes on) go at once. Issue 31: fewer flushes, Redis
script calls and wake-ups of the web readers at hundreds of paced streams (bench/README.md:
a tick of 20 against 10 ms, CPU and each delta's wait). Against a pipeline per write under
a lock: first-delta append p50 223 -> 6 ms at c=100 (2026-11-22, d3ec5ef;
docs/architecture.md's ledger).
"""
import asyncio
import logging

from redis.exceptions import ResponseError

from .entries import Entry, StreamFenced
from .redis_append import send_flush
from .redis_codec import one_connection_client, stream_key

log = logging.getLogger(__name__)

REFUSED_ID = "equal or smaller than the target stream top item"  # XADD's error for that
FLUSH_TIMEOUT_SECONDS = 10.0  # a flush not answered by then failed (Redis unreachable)


class RedisLogWriter:
    """The run's handle on one response's stream."""

    def __init__(self, shared: "StreamWriter", response_id: str):
        self.shared = shared
        self.key = stream_key(response_id)

    async def append(self, entry: Entry, urgent: bool = False, soon: bool = False) -> None:
        if urgent or entry.end:
            await self.shared.append(self.key, entry, True, soon)
        else:  # most entries: no coroutine more per chunk
            self.shared.put(self.key, entry, soon)

    def put(self, entry: Entry) -> None:
        """Append a non-urgent entry without waiting (as `append(entry)`), from sync code."""
        self.shared.put(self.key, entry, entry.end)

    async def close(self) -> None:
        self.shared.fenced.discard(self.key)
        self.shared.broken.pop(self.key, None)


class StreamWriter:
    """All writes of one event loop: pending entries per stream, sent by one flusher.

    One flush is in flight at a time (a stream's entries reach Redis in order). Entries
    gather until a tick after the last flush started (the module's docstring; without a
    tick, an entry that finds nothing pending and no flush in flight goes out at once, and
    entries that find a flush in flight gather for up to `flush_interval`). An urgent or
    soon entry starts a flush at once, or right
    after the one in flight; an urgent one's writer waits for the flush that carried it
    (a soon one's hears of a failure at its next append). Waiting on
    that flush's outcome, not on a lock, keeps an urgent entry from queueing behind
    every other flush of a busy loop.
    """

    def __init__(self, bus):
        self.bus = bus
        self.client = one_connection_client(bus.url)  # one flush in flight at a time
        self.pending: dict[str, Entry] = {}
        self.waiting: list[tuple[str, asyncio.Future]] = []  # urgent writers, by stream
        self.fenced: set[str] = set()
        self.broken: dict[str, Exception] = {}  # stream -> why its last flush failed
        self.flushing = False  # the flusher task is running
        self.due = False       # flush the pending entries without waiting for the timer
        self.timer: asyncio.TimerHandle | None = None
        self.flushed_at = 0.0  # loop time of the last flush's start
        self.loop = asyncio.get_running_loop()

    def put(self, key: str, entry: Entry, soon: bool = False) -> None:
        """Append an entry whose writer does not wait for it (not urgent)."""
        self._pend(key, entry)
        if soon:
            self._flush_due()
        elif self.timer is None and not self.flushing:  # nothing pending or in flight
            wait = self.flushed_at + self.bus.flush_tick - self.loop.time()
            if wait > 0:  # the last flush was less than a tick ago: gather until then
                self.timer = self.loop.call_later(wait, self._flush_due)
            else:
                self._flush_due()

    def flush_now(self) -> None:
        """Send what is pending at once, as if a tick had come (the loop's pass of tick
        reads just put its paced streams' entries: worker/tick_reads.py)."""
        if self.pending:
            self._flush_due()

    async def append(self, key: str, entry: Entry, urgent: bool, soon: bool = False) -> None:
        if not urgent:
            self.put(key, entry, soon)
            return
        self._pend(key, entry)
        sent = self.loop.create_future()
        self.waiting.append((key, sent))
        self._flush_due()
        await sent  # raises what stopped the flush that carried this entry
        if key in self.fenced:
            raise StreamFenced(key)

    def _pend(self, key: str, entry: Entry) -> None:
        """Add `entry` to its stream's pending one, unless the stream is fenced or a
        background flush of it failed (the run is told, by the exception)."""
        if key in self.fenced:
            raise StreamFenced(key)
        if key in self.broken:
            raise self.broken.pop(key)
        previous = self.pending.get(key)
        self.pending[key] = entry if previous is None else previous.merged(entry)

    async def aclose(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
        await self.client.aclose(close_connection_pool=True)

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
                self.flushed_at = self.loop.time()
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
                self.timer = self.loop.call_later(self._gathering(), self._flush_due)

    def _gathering(self) -> float:
        """How long entries that came during a flush wait for the next: until a tick after
        that flush's start (at once if it took longer), so that no entry waits more than a
        tick for its flush; without a tick, `flush_interval`."""
        if self.bus.flush_tick > 0:
            return max(0.0, self.flushed_at + self.bus.flush_tick - self.loop.time())
        return self.bus.flush_interval

    async def _send(self, batch: dict[str, Entry]) -> dict[str, Exception]:
        """One script call for the batch; the streams whose write failed, with the failure
        (also kept in `broken`, for writers that did not wait). Refused writes fence."""
        failures = {}
        try:
            async with asyncio.timeout(FLUSH_TIMEOUT_SECONDS):
                results = await send_flush(self.client, batch, self.bus.retention_ms,
                                           self.bus.running_ttl_ms)
        except Exception as exc:  # Redis unreachable: every run in the batch must know
            log.warning("event stream flush failed: %s", exc)
            failures = dict.fromkeys(batch, exc)
        else:
            for key, result in zip(batch, results):
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
