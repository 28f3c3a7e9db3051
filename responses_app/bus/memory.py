"""The in-process event bus of the embedded mode: logs in memory, readers on any loop.

The run writes from the worker's loop thread; readers live on the web server's loop, so
entries cross threads with `call_soon_threadsafe`. Logs are dropped `retention_seconds`
after they end. Entries written by a run carry the time they were appended (`at`).
"""
import threading
import time
from collections import deque

from .entries import Entry, RetainedLog, StreamFenced
from .subscription import Subscription


class _Log:
    def __init__(self):
        self.entries: list[Entry] = []
        self.subscribers: set[Subscription] = set()
        self.writer: object | None = None


class MemoryEventBus:
    def __init__(self, retention_seconds: int):
        self.retention_seconds = retention_seconds
        self._logs: dict[str, _Log] = {}
        self._ended: deque[tuple[float, str]] = deque()
        self._lock = threading.Lock()

    # --- writing (the run's loop) --------------------------------------------------------------
    def writer(self, response_id: str) -> "MemoryLogWriter":
        return MemoryLogWriter(self, response_id)

    def _append(self, response_id: str, writer: object, entry: Entry, adopt=False) -> None:
        """Append for `writer`; `adopt` takes the log over (the watchdog ending a dead run)."""
        with self._lock:
            log = self._logs.setdefault(response_id, _Log())
            ended = bool(log.entries) and log.entries[-1].end
            if log.writer is None or (adopt and not ended):
                log.writer = writer
            elif log.writer is not writer or ended:
                raise StreamFenced(response_id)
            if log.entries and entry.first <= log.entries[-1].last and entry.first <= entry.last:
                raise StreamFenced(response_id)
            log.entries.append(entry)
            subscribers = list(log.subscribers)
            if entry.end:
                self._ended.append((time.monotonic() + self.retention_seconds, response_id))
            self._expire()
        for subscription in subscribers:
            subscription.loop.call_soon_threadsafe(subscription.deliver, entry)

    def _expire(self) -> None:
        now = time.monotonic()
        while self._ended and self._ended[0][0] <= now:
            _, response_id = self._ended.popleft()
            self._logs.pop(response_id, None)

    def flush_now(self) -> None:
        """Nothing waits here: an entry is in the log as soon as it is written."""

    # --- deleting (any thread) -----------------------------------------------------------------
    def delete(self, *response_ids: str) -> None:
        """Drop these responses' logs (a deleted or pruned response)."""
        with self._lock:
            for response_id in response_ids:
                self._logs.pop(response_id, None)

    # --- reading (the web's loop) --------------------------------------------------------------
    async def subscribe(self, response_id: str, after: int = -1) -> Subscription:
        subscription = Subscription(response_id, after, on_close=self._unsubscribe)
        with self._lock:
            log = self._logs.setdefault(response_id, _Log())
            log.subscribers.add(subscription)
            backlog = list(log.entries)
        if not (backlog and backlog[-1].end):  # past the last event so far: from it (as
            subscription.cursor = min(after, backlog[-1].last if backlog else -1)  # Redis)
        for entry in backlog:
            subscription.deliver(entry)
        return subscription

    async def retained(self, response_id: str) -> bool:
        with self._lock:
            log = self._logs.get(response_id)
            return log is not None and bool(log.entries)

    # --- sync access, off the hot path (the watchdog, cancelling a queued run) -----------------
    def append_now(self, response_id: str, entry: Entry, seen: int | None = None) -> bool:
        """Append one entry at once (the log's owner is fenced off: `seen` is not needed)."""
        try:
            self._append(response_id, object(), entry, adopt=True)
        except StreamFenced:
            return False
        return True

    def _unsubscribe(self, subscription: Subscription) -> None:
        with self._lock:
            log = self._logs.get(subscription.response_id)
            if log is not None:
                log.subscribers.discard(subscription)

    # --- reading whole (the admin's event view, any thread) ------------------------------------
    def read_retained(self, response_id: str) -> RetainedLog | None:
        """The whole log of a response while it is kept, or None."""
        with self._lock:
            self._expire()
            log = self._logs.get(response_id)
            if log is None or not log.entries:
                return None
            entries = list(log.entries)
        expires_in = None
        if entries[-1].end and entries[-1].at is not None:
            expires_in = max(0.0, entries[-1].at + self.retention_seconds - time.time())
        return RetainedLog(entries, expires_in)


class MemoryLogWriter:
    """The run's handle on one response's log."""

    def __init__(self, bus: MemoryEventBus, response_id: str):
        self.bus = bus
        self.response_id = response_id

    async def append(self, entry: Entry, urgent: bool = False, soon: bool = False) -> None:
        self.put(entry)

    def put(self, entry: Entry) -> None:
        """Append without waiting, from sync code (the same as `append`)."""
        entry.at = time.time()
        self.bus._append(self.response_id, self, entry)

    async def close(self) -> None:
        return None
