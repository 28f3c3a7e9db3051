"""A search's second database connection: a read (the text ranking) run on a thread of
its own, on that thread's own Django connection, while the caller's thread embeds the query
and runs the vector ranking on its connection. A hybrid search's critical path is then the
longer of [embedding -> vector ranking] and [text ranking], not their sum (figures in
bench/README.md, "The two rankings at once").

- The threads: a small pool per process (VECTOR_SEARCH_SIDE_THREADS; 0: every search runs
  its rankings in turn on the caller's connection), long-lived, started on first use in the
  process that uses it (keyed by its pid, since threads do not survive a fork: a process
  forked after its parent made one makes its own; and by the setting's value). A web
  process's DRF views and a worker's file_search threads share it; the interpreter joins
  its idle threads at exit (concurrent.futures' own exit hook).
- Their connections: each piece of work takes one as Django's request cycle does,
  close_old_connections() before and after it. With the connection pool (CONN_MAX_AGE 0,
  gateway/database_settings.py) the connection goes back to the pool after each piece: an
  idle thread holds none (nothing to close at shutdown, no pool slot kept), a broken one
  is dropped, never reused.
- Not inside a transaction: where the caller's connection is in an atomic block (a view or
  a test inside `transaction.atomic`, pytest's non-transactional django_db tests) a second
  connection would not see its uncommitted rows; available() says no and the caller runs
  the read itself, in turn.
- Never waiting on a queue: when the caller wants the result and no thread has taken the
  read yet (every one busy with other searches'), the caller takes it back (Future.cancel)
  and runs it on its own connection, as the sequential path would. (Its cost: a hybrid
  search at once takes ~0.6-1.6 ms more CPU than in turn, the hop and a second round trip;
  on a host with no idle core it gains nothing, bench/README.md.)
"""
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor

from django.conf import settings
from django.db import close_old_connections, connection

_executors: dict[tuple[int, int], ThreadPoolExecutor] = {}  # (pid, threads)
_executors_lock = threading.Lock()


def available() -> bool:
    """Whether a read may run on a side thread now: threads configured, and the caller's
    connection outside any transaction."""
    return settings.VECTOR_SEARCH_SIDE_THREADS > 0 and not connection.in_atomic_block


class SideRead:
    """`function(*args)` started on a side thread (call only where available()); its
    result by result(), on the caller's thread if no side thread had started it."""

    def __init__(self, function, *args):
        self._function, self._args = function, args
        self._future: Future = _executor().submit(_on_side_connection, function, *args)

    def result(self):
        """The read's result (or its exception), waiting for it if it is running."""
        if self._future.cancel():  # not started: every side thread busy
            return self._function(*self._args)
        return self._future.result()

    def cancel(self) -> None:
        """Drop the read if it has not started (the caller failed before wanting it)."""
        self._future.cancel()


def _executor() -> ThreadPoolExecutor:
    key = (os.getpid(), settings.VECTOR_SEARCH_SIDE_THREADS)
    executor = _executors.get(key)
    if executor is None:
        with _executors_lock:
            executor = _executors.get(key)
            if executor is None:
                executor = _executors[key] = ThreadPoolExecutor(
                    max_workers=key[1], thread_name_prefix="search-side")
    return executor


def _on_side_connection(function, *args):
    close_old_connections()
    try:
        return function(*args)
    finally:
        close_old_connections()
