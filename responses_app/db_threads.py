"""The web process's database threads: ORM work from its event loop, one hop each way,
on a small pool of long-lived threads (their connections go back to the pool after).

It stands where channels' `database_sync_to_async` would, which runs every ORM call of the
process on one thread (thread-sensitive): 47-55 vs 72-120 us CPU and 61-209 vs 209-571 us
wall per hop, one caller (2026-11-27); kept for its parallel threads, under the CPU bar
(docs/architecture.md's ledger)."""
import asyncio
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

from django.conf import settings
from django.db import close_old_connections


@lru_cache(maxsize=1)
def _db_threads() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=settings.WEB_DB_THREADS, thread_name_prefix="web-db")


async def run_db(function, *args):
    """`function(*args)` on a database thread."""
    return await asyncio.get_running_loop().run_in_executor(_db_threads(), _with_db, function,
                                                             *args)


def _with_db(function, *args):
    try:
        return function(*args)
    finally:
        close_old_connections()
