"""The process's run loop: one asyncio loop on a background thread for all runs.

Runs are mostly waiting on sockets; one loop per process lets them share the upstream
connection pool and the bus writer's pipeline. Sync callers (Celery task threads, the
embedded dispatcher) submit coroutines with `run()` and block on the result, keeping
their ORM work on their own thread.
"""
import asyncio
import threading

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
    """uvloop when installed (a third of asyncio's cost per socket wake-up), else asyncio."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def run(coroutine):
    """Run `coroutine` on the run loop and return its result (blocking this thread)."""
    return asyncio.run_coroutine_threadsafe(coroutine, run_loop()).result()
