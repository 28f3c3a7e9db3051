"""The relay side of the Redis bus: one blocking XREAD over every stream a process relays,
fanned out to its readers (a stream's entries of one read as one entry), which waits
`read_coalesce` between reads only while several streams are writing; and for a new
reader, a read of its stream alone until its first entries arrive (added time to first
delta c=1 +20 -> +7 ms: 2026-11-22, 01a2d88). The shared read against an XREAD per
subscriber is still to be measured (docs/architecture.md's ledger). The shared XREAD is
packed by hand (redis_xread.py).
"""
import asyncio
import logging
import os
import time

import redis.asyncio as aioredis

from ..errors import ServiceUnavailable
from ..redis_client import DRIVER_INFO
from .entries import Entry, failure_entry
from .redis_codec import async_client, decode, decode_flat, one_connection_client, stream_key
from .redis_xread import PackedXRead
from .subscription import Subscription

log = logging.getLogger(__name__)

READ_BLOCK_MS = 5_000
# A read that has not answered this long after its block ended is lost (Redis unreachable,
# a partition that neither answers nor resets): its readers get the failure, a clean end.
READ_GRACE_SECONDS = 10.0  # generous: a busy loop may answer late
# A new reader's first entries come from a blocking XREAD of its stream alone, on a
# connection of its own: they reach it at once, not at the shared read's next turn (which
# may be waiting for entries to gather). At most FIRST_READS at once per process; a
# stream beyond that, or silent for FIRST_READ_BLOCK_MS, is served by the shared read.
FIRST_READS = 32
FIRST_READ_BLOCK_MS = 1_000
WAKE_KEY_TTL_SECONDS = 24 * 3600
WAKE_KEY_REFRESH_SECONDS = 3600


class ReadHub:
    """One blocking XREAD over every stream this process relays, fanned out to readers;
    and for a new reader, a read of its stream alone until its first entries arrive."""

    def __init__(self, bus):
        self.bus = bus
        self.client = async_client(bus.url)
        # the one blocking XREAD (one read at a time): it answers within READ_BLOCK_MS, or
        # Redis is unreachable (READ_GRACE_SECONDS later: _read_forever)
        self.reader = one_connection_client(bus.url)
        self.xread = PackedXRead(self.reader, READ_BLOCK_MS)  # its command packed by hand
        self.first_reader = aioredis.Redis.from_url(
            bus.url, socket_timeout=FIRST_READ_BLOCK_MS / 1000 + READ_GRACE_SECONDS,
            socket_connect_timeout=5, driver_info=DRIVER_INFO)
        self.first_reads: dict[Subscription, asyncio.Task] = {}
        self.wake_key = f"gw:wake:{os.getpid()}:{os.urandom(4).hex()}"
        self.wake_id = b"0-0"
        self.wake_refresh_due = 0.0
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
        if after >= 0:
            await self._check_cursor(subscription)
            if subscription.ended:
                return subscription
        self.subscribers.setdefault(key, set()).add(subscription)
        if len(self.first_reads) < FIRST_READS:
            # the shared read leaves the stream to its first read until that one is done
            self.first_reads[subscription] = asyncio.ensure_future(
                self._read_first(subscription))
        else:
            await self._read_shared()
        return subscription

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
        for task in [self.task, *self.first_reads.values()]:
            if task is not None:
                task.cancel()
        for client in (self.client, self.reader, self.first_reader):
            await client.aclose(close_connection_pool=True)

    async def _read_shared(self) -> None:
        """Have the shared read take in the streams it skips now: start it, or wake it
        (once per XREAD) if it is blocking."""
        if self.task is None or self.task.done():
            self.task = asyncio.ensure_future(self._read_forever())
        elif self.reading and not self.woken:
            self.woken = True
            try:
                await self.client.xadd(self.wake_key, {"w": 1}, maxlen=16, approximate=True)
            except BaseException:
                self.woken = False  # the next caller tries again
                raise

    async def _read_first(self, subscription: Subscription) -> None:
        """Deliver the stream's next entries as soon as they are written (once), then hand
        the stream to the shared read."""
        cursor = "0-0" if subscription.cursor < 0 else f"1-{subscription.cursor}"
        try:
            reply = await self.first_reader.xread({subscription.key: cursor},
                                                  block=FIRST_READ_BLOCK_MS)
        except Exception as exc:  # the shared read serves the stream (and reports failures)
            log.debug("first read of %s failed: %s", subscription.key, exc)
            reply = None
        finally:
            self.first_reads.pop(subscription, None)
        for _, entries in reply or ():
            for entry_id, fields in entries:
                subscription.deliver(decode(entry_id, fields))  # the cursor drops repeats
        try:
            await self._read_shared()
        except Exception as exc:  # Redis away: the shared read's next turn takes it in
            log.debug("waking the shared read for %s failed: %s", subscription.key, exc)

    def _unsubscribe(self, subscription: Subscription) -> None:
        first_read = self.first_reads.pop(subscription, None)
        if first_read is not None:
            first_read.cancel()
        group = self.subscribers.get(subscription.key)
        if group is not None:
            group.discard(subscription)
            if not group:
                del self.subscribers[subscription.key]
                self.xread.forget(subscription.key)

    async def _refresh_wake_key(self) -> None:
        """Keep the wake key expiring a day after the last read (refreshed hourly at most:
        the read stops and starts again as streams end)."""
        now = time.monotonic()
        if now >= self.wake_refresh_due:
            await self.client.expire(self.wake_key, WAKE_KEY_TTL_SECONDS)
            self.wake_refresh_due = now + WAKE_KEY_REFRESH_SECONDS

    def _read_from(self) -> dict[str, int]:
        """Each stream to read, from its readers' lowest cursor: a stream whose every
        reader has its end queued, or a first read of its own under way, is not read. (A
        loop over every stream held, on every read: kept plain.)"""
        first_reads = self.first_reads
        read_from = {}
        for key, group in self.subscribers.items():
            wanted, lowest = False, None
            for subscription in group:
                if not subscription.ended and subscription not in first_reads:
                    wanted = True
                if lowest is None or subscription.cursor < lowest:
                    lowest = subscription.cursor
            if wanted:
                read_from[key] = lowest
        return read_from

    async def _read_forever(self) -> None:
        try:
            await self._refresh_wake_key()
            while True:
                # a stream whose every reader has its end queued, or a first read of its
                # own under way, is not read; when no stream is left the read stops (a
                # subscribe or a first read done starts it again, with no wake-up)
                read_from = self._read_from()
                if not read_from:
                    break
                command = self.xread.command(read_from, self.wake_key, self.wake_id)
                self.reading, self.woken = True, False
                try:
                    async with asyncio.timeout(READ_BLOCK_MS / 1000 + READ_GRACE_SECONDS):
                        reply = await self.xread.read(command)
                finally:
                    self.reading = False
                delivered = 0  # streams that had entries
                for raw_key, entries in reply or ():
                    key = raw_key.decode()
                    if key == self.wake_key:
                        self.wake_id = entries[-1][0]
                        continue
                    delivered += 1
                    decoded = [decode_flat(entry_id, fields) for entry_id, fields in entries]
                    if len(decoded) > 1:
                        decoded = _joined(decoded)
                    for subscription in list(self.subscribers.get(key, ())):
                        if subscription.cursor < read_from[key]:
                            # it joined during this read, from further back: these entries
                            # would skip what it has not seen; its first read or the next
                            # read (from its cursor) serves it
                            continue
                        for entry in decoded:
                            subscription.deliver(entry)
                if delivered > 1 and self.bus.read_coalesce:
                    # under load (several streams wrote meanwhile): let entries of other
                    # streams gather, so that the next XREAD serves many (what this one
                    # brought is delivered already); one stream alone is read at once
                    await asyncio.sleep(self.bus.read_coalesce)
        except Exception as exc:  # Redis gone: every reader gets the failure
            log.error("event stream reader failed: %s", exc)
            failure = failure_entry(ServiceUnavailable(
                "The event stream is unavailable; retry shortly."))
            for group in self.subscribers.values():
                for subscription in group:
                    subscription.put(failure)
            self.subscribers.clear()


def _joined(entries: list) -> list:
    """A stream's entries of one read (several) as one entry (its events in order, the end
    if the last has it), so that a reader takes them in one write; as they are if one is
    an error."""
    if any(entry.error is not None for entry in entries):
        return entries
    last = entries[-1]  # one list of events, not one per entry joined (Entry.merged)
    return [Entry(entries[0].first, last.last,
                  [event for entry in entries for event in entry.events], last.end)]
