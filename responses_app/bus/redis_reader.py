"""The relay side of the Redis bus: a web loop hears the entries of the streams it relays
on one pub/sub connection (redis_listen.py: every entry the workers append is published
on its stream's key) and hands each to the stream's readers at once, in order by sequence
number: an entry that does not follow a reader's cursor (a message missed), a reader just
subscribed (its history, and what was written before its subscription took hold), and
streams silent for POLL_SECONDS (a writer that does not publish; a lost connection) are
read from the streams themselves with one XREAD of those streams (redis_xread.py). The
streams stay the truth; pub/sub only spares reading them. A lost pub/sub connection (the
network, a Redis restart, Redis dropping a listener past its `client-output-buffer-limit
pubsub`) sends its readers back to their streams: a new listener subscribes the streams
held, and each is read from its readers' cursors once its subscription holds, then heard
again; readers fail (their streams end without [DONE], the client resumes) only when Redis
cannot be reached within the connect timeout and READ_GRACE_SECONDS, as a failed read.

Against the shared XREAD it replaces (every held stream listed every read, 20 ms apart
under load), measured 2026-11-28 (bench/paced_web.py, 300 and 100 streams at 50 ms
pacing, own Redis server, 4 pairs): Redis 0.70-0.86x CPU per entry, the web 0.79-0.91x
in 3 of 4 pairs (1.07x in one), each delta's lag p50 10-11 against 31-46 ms; the gateway's
web + Redis per response 0.76x, 0.90x at `50:100:300`; at `50:300:600` on a quiet machine
(load 1.3-2.0, against main 092323d) web + Redis 0.94x, 0.85x, all-in 0.98x, 0.88x, first
delta p99 +107, +46 against +149, +105 ms (bench/README.md, web round 5 and its retry);
as it is now, against main a825eea (web round 6, load 0.3-2.9): web + Redis 0.80x, 0.85x,
0.76x, 0.86x, all-in 0.91x, 0.89x, 0.81x, 0.93x; the relay alone each delta's lag p50 ~6
against ~19 ms.
"""
import asyncio
import logging

from ..errors import ServiceUnavailable
from .entries import Entry, bus_failure_entry
from .redis_codec import (async_client, decode, decode_flat, decode_message,
                          one_connection_client, stream_key)
from .redis_listen import Listener
from .redis_xread import PackedXRead
from .subscription import Subscription

log = logging.getLogger(__name__)

# A read of the streams that has not answered by then is lost (Redis unreachable, a
# partition that neither answers nor resets): its readers get the failure, a clean end.
READ_GRACE_SECONDS = 10.0  # generous: a busy loop may answer late
# A stream none of whose messages came for this long is read from the stream itself:
# entries of a writer that does not publish (one of the previous release, while a
# deployment rolls) arrive within this; and a pub/sub connection that hangs in a partition
# is found out, every stream falling silent, by a read that does not answer.
POLL_SECONDS = 1.0


class ReadHub:
    """The streams one web loop relays: their readers, the pub/sub connection they are
    heard on, and the reads of the streams themselves that catch readers up."""

    def __init__(self, bus):
        self.bus = bus
        self.client = async_client(bus.url)
        self.reader = one_connection_client(bus.url)  # catch-up reads, one at a time
        self.xread = PackedXRead(self.reader)  # their command packed by hand
        self.listener: Listener | None = None  # connecting or connected
        self.connecting: asyncio.Task | None = None  # the listener's connect
        self.subscribers: dict[str, set[Subscription]] = {}
        self.behind: set[str] = set()  # streams to read from the stream (catch up)
        self.heard: set[str] = set()   # streams that had a message since the last poll
        self.task: asyncio.Task | None = None  # the catch-up reads
        self.poll: asyncio.TimerHandle | None = None

    async def subscribe(self, response_id: str, after: int) -> Subscription:
        key = stream_key(response_id)
        subscription = Subscription(response_id, after, on_close=self._unsubscribe)
        subscription.key = key
        if after >= 0:
            await self._check_cursor(subscription)
            if subscription.ended:
                return subscription
        if self.connecting is None:
            self._listen()
        await asyncio.shield(self.connecting)  # raises if Redis is unreachable
        group = self.subscribers.get(key)
        if group is None:
            # its catch-up read comes once the subscription holds (_subscribed): nothing
            # written after that read is missed, it is published to us
            self.subscribers[key] = {subscription}
            if self.listener is not None:  # connecting: it subscribes every held stream
                self.listener.subscribe(key)
            else:  # lost since, with nothing else held
                self._listen()
        else:  # the stream is heard already (or soon: its read follows then)
            group.add(subscription)
            self._catch_up(key)
        self._poll_later()
        return subscription

    # --- the pub/sub connection ------------------------------------------------------------
    def _listen(self) -> None:
        """Open a listener; once connected, it subscribes every stream held then."""
        listener = self.listener = Listener(self.bus.url, self._heard, self._subscribed,
                                            self._lost)
        self.connecting = asyncio.ensure_future(self._connect(listener))
        self.connecting.add_done_callback(_retrieved)

    async def _connect(self, listener: Listener) -> None:
        try:
            await listener.connect(READ_GRACE_SECONDS)
        except Exception as exc:  # Redis unreachable: as a failed read, readers fail
            if listener is self.listener:
                self._fail(exc)
            raise
        if listener is not self.listener:  # the hub failed meanwhile
            listener.close()
            return
        for key in self.subscribers:
            listener.subscribe(key)

    def _lost(self, listener: Listener, exc: Exception, recoverable: bool) -> None:
        """A listener lost: its readers go back to their streams. A new listener subscribes
        the streams held, and each is read from its readers' cursors once its subscription
        holds (_subscribed), then heard again; if Redis cannot be reached, they fail then.
        A listener that failed otherwise (a refused command) fails them now."""
        if listener is not self.listener:
            return
        if not recoverable:
            self._fail(exc)
            return
        self.listener = self.connecting = None
        if self.subscribers:
            log.warning("event stream pub/sub connection lost (%s); listening again, %d "
                        "streams caught up from Redis", exc, len(self.subscribers))
            self._listen()

    async def _check_cursor(self, subscription: Subscription) -> None:
        """A cursor no read from it would serve (XREAD is exclusive): at or past the end
        of a finished stream (or of one that ended in an error, whose entry sorts first),
        the end is delivered now, so that the reader ends at once; past the last event of
        a running stream (no client saw those events), it is moved back to that event, so
        that the reader gets what comes next and the end."""
        top = await self.client.xrevrange(subscription.key, count=1)
        entry = decode(*top[0]) if top else None
        if entry is not None and entry.end:
            if entry.error is not None or entry.last <= subscription.cursor:
                subscription.deliver(entry)
        else:
            subscription.cursor = min(subscription.cursor, -1 if entry is None else entry.last)

    async def aclose(self) -> None:
        """Stop reading and close the connections."""
        for pending in (self.task, self.connecting):
            if pending is not None:
                pending.cancel()
        if self.poll is not None:
            self.poll.cancel()
        if self.listener is not None:
            self.listener.close()
            self.listener = None
        for client in (self.client, self.reader):
            await client.aclose(close_connection_pool=True)

    # --- what pub/sub brings ---------------------------------------------------------------
    def _heard(self, channel: bytes, data: bytes) -> None:
        """A message: the entry to every reader whose cursor it follows; a reader it does
        not follow (one missed before it) is caught up from the stream."""
        key = channel.decode()
        group = self.subscribers.get(key)
        if group is None:  # unsubscribed meanwhile
            return
        self.heard.add(key)
        entry = decode_message(data)
        for subscription in list(group):
            if subscription.ended:
                continue
            if entry.error is not None:
                if subscription.cursor < 0:  # nothing before it
                    subscription.deliver(entry)
                else:  # an error from outside (`2-0`): a read of the stream decides
                    self._catch_up(key)
            elif entry.first <= subscription.cursor + 1:
                subscription.deliver(entry)  # it trims what the reader has seen
            else:
                self._catch_up(key)

    def _subscribed(self, channel: bytes) -> None:
        """What is published on the stream reaches us from now: read what came before."""
        self._catch_up(channel.decode())

    def _unsubscribe(self, subscription: Subscription) -> None:
        group = self.subscribers.get(subscription.key)
        if group is not None:
            group.discard(subscription)
            if not group:
                del self.subscribers[subscription.key]
                self.xread.forget(subscription.key)
                if self.listener is not None:
                    self.listener.unsubscribe(subscription.key)

    # --- reading the streams themselves --------------------------------------------------
    def _catch_up(self, key: str) -> None:
        self.behind.add(key)
        if self.task is None or self.task.done():
            self.task = asyncio.ensure_future(self._read_behind())

    def _poll_later(self) -> None:
        if self.poll is None:
            self.poll = asyncio.get_running_loop().call_later(POLL_SECONDS, self._poll_silent)

    def _poll_silent(self) -> None:
        """Catch up the streams no message came for since the last poll (while a listener
        connects, its subscriptions will)."""
        self.poll = None
        if not self.subscribers:
            return
        if self.listener is not None and self.listener.connected:
            silent = [key for key in self.subscribers if key not in self.heard]
            for key in silent:
                self._catch_up(key)
        self.heard.clear()
        self._poll_later()

    def _read_from(self, keys) -> dict[str, int]:
        """Each stream to read, from its readers' lowest cursor: a stream whose every
        reader has its end queued is not read."""
        read_from = {}
        for key in keys:
            wanted, lowest = False, None
            for subscription in self.subscribers.get(key, ()):
                if not subscription.ended:
                    wanted = True
                if lowest is None or subscription.cursor < lowest:
                    lowest = subscription.cursor
            if wanted:
                read_from[key] = lowest
        return read_from

    async def _read_behind(self) -> None:
        """Read the streams behind, from their readers' cursors, until none is."""
        try:
            while self.behind:
                read_from = self._read_from(self.behind)
                self.behind = set()
                if not read_from:
                    continue
                async with asyncio.timeout(READ_GRACE_SECONDS):
                    reply = await self.xread.read(self.xread.command(read_from))
                for raw_key, entries in reply or ():
                    key = raw_key.decode()
                    decoded = [decode_flat(entry_id, fields) for entry_id, fields in entries]
                    if len(decoded) > 1:
                        decoded = _joined(decoded)
                    for subscription in list(self.subscribers.get(key, ())):
                        if subscription.cursor < read_from[key]:
                            # it joined during this read, from further back: these entries
                            # would skip what it has not seen; the next read serves it
                            self.behind.add(key)
                            continue
                        for entry in decoded:
                            subscription.deliver(entry)
        except Exception as exc:  # Redis gone: every reader gets the failure
            self._fail(exc)

    def _fail(self, exc: Exception) -> None:
        """Redis is gone: every reader gets the failure (a clean end of its stream)."""
        log.error("event stream reader failed: %s", exc)
        failure = bus_failure_entry(ServiceUnavailable(
            "The event stream is unavailable; retry shortly."))
        for group in self.subscribers.values():
            for subscription in group:
                subscription.put(failure)
        self.subscribers.clear()
        self.behind.clear()
        self.heard.clear()
        if self.poll is not None:
            self.poll.cancel()
            self.poll = None
        if self.listener is not None:
            self.listener.close()
        self.listener = self.connecting = None


def _retrieved(task: asyncio.Task) -> None:
    """A listener's connect: its failure is the readers' (_fail), not an unretrieved one."""
    if not task.cancelled():
        task.exception()


def _joined(entries: list) -> list:
    """A stream's entries of one read (several) as one entry (its events in order, the end
    if the last has it), so that a reader takes them in one write; as they are if one is
    an error."""
    if any(entry.error is not None for entry in entries):
        return entries
    last = entries[-1]  # one list of events, not one per entry joined (Entry.merged)
    return [Entry(entries[0].first, last.last,
                  [event for entry in entries for event in entry.events], last.end)]
