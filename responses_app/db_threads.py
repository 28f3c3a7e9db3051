"""The web process's database threads: ORM work from its event loop, one hop each way,
on a small pool of long-lived threads (their connections go back to the pool after).

It stands where channels' `database_sync_to_async` would, which runs every ORM call of the
process on one thread (thread-sensitive): 47-55 vs 72-120 us CPU and 61-209 vs 209-571 us
wall per hop, one caller (2026-11-27); kept for its parallel threads, under the CPU bar
(docs/architecture.md's ledger).

A caller waits at most DATABASE_WAIT_SECONDS for the result, then gets a 503 to retry: a
database that stops answering (a partition) holds the thread until the connection's own
timeouts fail it (gateway/settings.py), not the client."""
import asyncio
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

from django.conf import settings
from django.db import close_old_connections

from .errors import database_did_not_answer


@lru_cache(maxsize=1)
def _db_threads() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=settings.WEB_DB_THREADS, thread_name_prefix="web-db")


async def run_db(function, *args):
    """`function(*args)` on a database thread; ServiceUnavailable if it takes longer than
    DATABASE_WAIT_SECONDS (waiting for a free thread included)."""
    work = asyncio.get_running_loop().run_in_executor(_db_threads(), on_pooled_connection, function, *args)
    try:
        async with asyncio.timeout(settings.DATABASE_WAIT_SECONDS):
            return await work
    except TimeoutError:
        raise database_did_not_answer() from None


def on_pooled_connection(function, *args, **kwargs):
    """`function` on this thread's Django connection, handed back to the pool after it."""
    try:
        return function(*args, **kwargs)
    finally:
        close_old_connections()
