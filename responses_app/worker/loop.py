"""The process's run loop: one asyncio loop on a background thread for all runs, and the
few database threads its runs hand their blocking work to.

Runs are mostly waiting on sockets; one loop per process lets them share the upstream
connection pool and the bus writer's flushes. A run is a coroutine on this loop; its
blocking calls (reading its history, a conversation's turn, an MCP plan) go to
`WORKER_DB_THREADS` threads with `blocking()`, one hop each way, so no thread is held
while a run streams. A sync caller (the embedded dispatcher) submits a coroutine with
`run()` and waits. `blocking()` is the web's `run_db` on the worker's threads: the same
measure and rule (db_threads.py, docs/architecture.md's ledger).
"""
import asyncio
import contextvars
import threading
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

from django.conf import settings

from responses_app.db_threads import on_pooled_connection

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def run_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _lock:
        if _loop is None or _loop.is_closed():
            _loop = new_event_loop()
            thread = threading.Thread(target=_loop.run_forever, name="run-loop", daemon=True)
            thread.start()
        return _loop


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop when installed (it costs less per socket wake-up), else asyncio."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def run(coroutine):
    """Run `coroutine` on the run loop and return its result (blocking this thread)."""
    return asyncio.run_coroutine_threadsafe(coroutine, run_loop()).result()


@lru_cache(maxsize=1)
def _db_threads() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=settings.WORKER_DB_THREADS,
                              thread_name_prefix="run-db")


async def blocking(function, *args):
    """`function(*args)` on a database thread, in this task's context (its request id);
    the thread's database connection goes back to the pool afterwards."""
    context = contextvars.copy_context()
    return await asyncio.get_running_loop().run_in_executor(
        _db_threads(), context.run, on_pooled_connection, function, *args)

