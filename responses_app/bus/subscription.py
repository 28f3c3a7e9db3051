"""A reader's view of one response's event log: entries after its cursor, in order."""
import asyncio
import logging
from collections import deque

from .entries import KEEPALIVE, Entry

log = logging.getLogger(__name__)


class Subscription:
    """Receives entries on the subscriber's event loop; `get()` waits for the next one.

    A deque and one waiter future rather than an asyncio.Queue and a timeout scope per
    wait: the relay waits once per entry of every stream it serves (6.8-7.0 vs 14.7-15.2 us
    CPU per entry against `asyncio.wait_for(queue.get())`, in process, 2026-11-27;
    docs/architecture.md's ledger).

    `direct`, when the reader sets it: a sync callable that takes an entry of events
    (neither an end nor an error) while the reader waits in `get()` with nothing queued,
    at once, on the deliverer's turn (the bus reader's pass over every stream it read),
    instead of a wake-up of the reader's task per entry; if it returns False it took
    nothing, and the entry is queued. Everything else, and an entry that comes while the
    reader is busy, is queued as before, so entries stay in order.
    A keep-alive is then due `keepalive_seconds` after the last entry taken either way."""

    def __init__(self, response_id: str, after: int, on_close=None):
        self.response_id = response_id
        self.cursor = after
        self.loop = asyncio.get_running_loop()
        self.pending: deque = deque()
        self._waiter: asyncio.Future | None = None
        self._on_close = on_close
        self.ended = False  # its last entry (an end or an error) is queued: nothing to read
        # a log that ended at or before the cursor (a resume after its end): its last event,
        # the terminal one unless it ended without (not sent; relay_span takes its outcome)
        self.passed_end: bytes | None = None
        self.direct = None  # see the class docstring
        # set by the run's creator: takes the run back if no worker took it yet (relay.py)
        self.withdraw = None
        self._taken_at = 0.0  # loop time of the last entry `direct` took
        self._timer: asyncio.TimerHandle | None = None  # the wait's keep-alive

    def deliver(self, entry: Entry) -> None:
        """Called on the subscriber's loop: queue what this reader has not seen yet."""
        if entry.error is None and entry.first > self.cursor:  # all of it new: the usual
            self.cursor = entry.last
            self.put(entry)
            return
        trimmed = entry.after(self.cursor)
        if trimmed is None:
            if entry.end and not self.ended:  # the log ended at or before the cursor:
                self.passed_end = entry.events[-1] if entry.events else None
                self.put(Entry(self.cursor + 1, self.cursor, [], end=True))  # nothing left
            return
        if trimmed.error is None:
            self.cursor = trimmed.last
        self.put(trimmed)

    def put(self, entry: Entry) -> None:
        """Queue `entry` as it is (an error that ends the stream), or hand it to `direct`."""
        waiter = self._waiter
        if (self.direct is not None and waiter is not None and not self.pending
                and not entry.end and entry.error is None and not waiter.done()):
            try:
                taken = self.direct(entry) is not False
            except Exception:  # the reader's own path takes it, and raises there
                log.exception("direct delivery failed; the entry is queued")
                self.direct = None
            else:
                if taken:
                    self._taken_at = self.loop.time()
                    return
        self.pending.append(entry)
        if entry.end:
            self.ended = True
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def get(self, keepalive_seconds: float | None = None):
        """The next entry, or KEEPALIVE after `keepalive_seconds` without one."""
        if not self.pending:
            waiter = self._waiter = self.loop.create_future()
            self._timer = (self.loop.call_later(keepalive_seconds, self._expire, waiter,
                                                keepalive_seconds)
                           if keepalive_seconds is not None else None)
            try:
                await waiter
            finally:
                self._waiter = None
                if self._timer is not None:
                    self._timer.cancel()
                    self._timer = None
            if not self.pending:
                return KEEPALIVE
        return self.pending.popleft()

    def ready(self) -> Entry | None:
        """The next entry if one is queued already, without waiting; else None."""
        return self.pending.popleft() if self.pending else None

    def _expire(self, waiter: asyncio.Future, keepalive_seconds: float) -> None:
        """The keep-alive is due, unless `direct` took an entry meanwhile: then later."""
        if waiter.done():
            return
        due = self._taken_at + keepalive_seconds
        if due > self.loop.time():
            self._timer = self.loop.call_at(due, self._expire, waiter, keepalive_seconds)
        else:
            waiter.set_result(None)

    def close(self) -> None:
        self.direct = None
        if self._on_close is not None:
            self._on_close(self)
            self._on_close = None
