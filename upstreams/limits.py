"""Per-upstream concurrency: at most `max_concurrency` open streams per route per process.

A semaphore per route on the process's run loop (every run of a worker process shares
that loop). The limit is per worker process, so a deployment's total is the limit times
the number of worker processes. A run waits for a slot; if none frees up in `wait`
seconds it gives up with UpstreamBusy.
"""
import asyncio
from contextlib import asynccontextmanager

_semaphores: dict = {}  # (event loop, route name) -> (limit, asyncio.Semaphore)


class UpstreamBusy(Exception):
    """No slot of this upstream freed up in time."""


@asynccontextmanager
async def upstream_slot(route, wait: float):
    """Hold one of `route`'s slots for the body (no limit when max_concurrency is 0)."""
    limit = route.max_concurrency
    if limit <= 0:
        yield
        return
    key = (asyncio.get_running_loop(), route.name)
    entry = _semaphores.get(key)
    if entry is None or entry[0] != limit:  # a changed limit starts a new semaphore
        entry = _semaphores[key] = (limit, asyncio.Semaphore(limit))
    semaphore = entry[1]
    try:
        async with asyncio.timeout(wait):
            await semaphore.acquire()
    except TimeoutError:
        raise UpstreamBusy(f"The upstream '{route.name}' is at its limit of {limit} "
                           f"concurrent requests.") from None
    try:
        yield
    finally:
        semaphore.release()
