"""A table read from the database, kept in a process for a few seconds: the upstream routes
(upstreams.routing) and the web search backends (hosted_tools.backend_table) are read on
every request and change rarely; a save in this process forgets the table at once (their
signals), other processes read it again once it is older than its setting.
"""
import threading
import time
from typing import Callable, Generic, TypeVar

from django.conf import settings

Table = TypeVar("Table")


class TableCache(Generic[Table]):
    """`load()`'s result, read again when older than the setting named `ttl_setting`."""

    def __init__(self, load: Callable[[], Table], ttl_setting: str):
        self.load, self.ttl_setting = load, ttl_setting
        self._lock = threading.Lock()
        self._cached: tuple[float, Table] | None = None

    def remembered(self) -> Table | None:
        """The table in memory, or None when it must be read again (from an event loop,
        which must not wait for the database)."""
        cached = self._cached
        if cached is None or cached[0] <= time.monotonic():
            return None
        return cached[1]

    def current(self) -> Table:
        """The current table (read from the database when older than the setting)."""
        cached = self._cached
        if cached is not None and cached[0] > time.monotonic():
            return cached[1]
        with self._lock:
            if self._cached is None or self._cached[0] <= time.monotonic():
                expires = time.monotonic() + getattr(settings, self.ttl_setting)
                self._cached = (expires, self.load())
            return self._cached[1]

    def forget(self) -> None:
        self._cached = None
