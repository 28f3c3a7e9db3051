"""A reader's view of one response's event log: entries after its cursor, in order."""
import asyncio

from .entries import KEEPALIVE, Entry


class Subscription:
    """Receives entries on the subscriber's event loop; `get()` waits for the next one."""

    def __init__(self, response_id: str, after: int, on_close=None):
        self.response_id = response_id
        self.cursor = after
        self.loop = asyncio.get_running_loop()
        self.queue: asyncio.Queue = asyncio.Queue()
        self._on_close = on_close

    def deliver(self, entry: Entry) -> None:
        """Called on the subscriber's loop: queue what this reader has not seen yet."""
        trimmed = entry.after(self.cursor)
        if trimmed is None:
            return
        if trimmed.error is None:
            self.cursor = trimmed.last
        self.queue.put_nowait(trimmed)

    async def get(self, keepalive_seconds: float | None = None):
        """The next entry, or KEEPALIVE after `keepalive_seconds` without one."""
        if not self.queue.empty():  # no timer needed
            return self.queue.get_nowait()
        if keepalive_seconds is None:
            return await self.queue.get()
        try:
            async with asyncio.timeout(keepalive_seconds):
                return await self.queue.get()
        except TimeoutError:
            return KEEPALIVE

    def close(self) -> None:
        if self._on_close is not None:
            self._on_close(self)
            self._on_close = None
