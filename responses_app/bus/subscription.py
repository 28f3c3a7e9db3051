"""A reader's view of one response's event log: entries after its cursor, in order."""
import asyncio
from collections import deque

from .entries import KEEPALIVE, Entry


class Subscription:
    """Receives entries on the subscriber's event loop; `get()` waits for the next one.

    A deque and one waiter future rather than an asyncio.Queue and a timeout scope per
    wait: the relay waits once per entry of every stream it serves (6.8-7.0 vs 14.7-15.2 us
    CPU per entry against `asyncio.wait_for(queue.get())`, in process, 2026-11-27;
    docs/architecture.md's ledger)."""

    def __init__(self, response_id: str, after: int, on_close=None):
        self.response_id = response_id
        self.cursor = after
        self.loop = asyncio.get_running_loop()
        self.pending: deque = deque()
        self._waiter: asyncio.Future | None = None
        self._on_close = on_close
        self.ended = False  # its last entry (an end or an error) is queued: nothing to read

    def deliver(self, entry: Entry) -> None:
        """Called on the subscriber's loop: queue what this reader has not seen yet."""
        trimmed = entry.after(self.cursor)
        if trimmed is None:
            if entry.end and not self.ended:  # the log ended at or before the cursor:
                self.put(Entry(self.cursor + 1, self.cursor, [], end=True))  # nothing left
            return
        if trimmed.error is None:
            self.cursor = trimmed.last
        self.put(trimmed)

    def put(self, entry: Entry) -> None:
        """Queue `entry` as it is (an error that ends the stream)."""
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
            timer = (self.loop.call_later(keepalive_seconds, _expire, waiter)
                     if keepalive_seconds is not None else None)
            try:
                await waiter
            finally:
                self._waiter = None
                if timer is not None:
                    timer.cancel()
            if not self.pending:
                return KEEPALIVE
        return self.pending.popleft()

    def ready(self) -> Entry | None:
        """The next entry if one is queued already, without waiting; else None."""
        return self.pending.popleft() if self.pending else None

    def close(self) -> None:
        if self._on_close is not None:
            self._on_close(self)
            self._on_close = None


def _expire(waiter: asyncio.Future) -> None:
    if not waiter.done():
        waiter.set_result(None)
