"""The two row statements on the way to a response's first event, sent from an event loop:
the web's INSERT of a new response and the worker's claim of a run sent with its job.

On Postgres they go through psycopg's async connections, a small pool per event loop, so
neither waits for a database thread (a hop to a thread and back costs milliseconds on a
busy process, each way). Elsewhere (SQLite, the embedded mode) they run through Django's
connection on a database thread, given as `on_thread`. The statements are the ones the
ORM path uses (response_rows, worker.result_store).
"""
import asyncio
import itertools
import time
from functools import lru_cache

from django.db import connection

from .models import ResponseStatus
from .response_rows import CLAIM_ID_SQL, INSERT_SQL, STATUS_SQL, claim_retry_delay, insert_params

POOL_MAX_SIZE = 8
POOL_TIMEOUT_SECONDS = 10.0

_pools: dict = {}  # event loop -> psycopg_pool.AsyncConnectionPool


async def insert_response(row, on_thread) -> None:
    """INSERT the new response's row (autocommit: committed on return)."""
    if not _on_postgres():
        from .response_rows import insert_response as insert_on_thread

        await on_thread(insert_on_thread, row)
        return
    async with (await _pool()).connection() as conn:
        await conn.execute(INSERT_SQL, insert_params(row, connection.ops))


async def claim(response_id: str, worker: str, on_thread) -> bool:
    """Take the queued response `response_id` for `worker`; whether it got it."""
    if not _on_postgres():
        from .worker.result_store import claim as claim_on_thread

        return await on_thread(claim_on_thread, response_id, worker)
    started = time.monotonic()
    for attempt in itertools.count():
        async with (await _pool()).connection() as conn:
            cursor = await conn.execute(CLAIM_ID_SQL, [
                ResponseStatus.IN_PROGRESS, worker, response_id, ResponseStatus.QUEUED])
            if await cursor.fetchone() is not None:
                return True
            row = await (await conn.execute(STATUS_SQL, [response_id])).fetchone()
        delay = claim_retry_delay(attempt, started, row[0] if row else None)
        if delay is None:
            return False
        await asyncio.sleep(delay)


@lru_cache(maxsize=1)
def _on_postgres() -> bool:
    return connection.vendor == "postgresql"


async def _pool():
    """The running loop's pool (opened on first use)."""
    loop = asyncio.get_running_loop()
    pool = _pools.get(loop)
    if pool is None:
        from psycopg_pool import AsyncConnectionPool

        pool = _pools[loop] = AsyncConnectionPool(
            _conninfo(), min_size=1, max_size=POOL_MAX_SIZE, timeout=POOL_TIMEOUT_SECONDS,
            open=False, name="loop-rows", kwargs={
                "autocommit": True,
                # as Django's connections: no server-side prepared statements unless asked
                "prepare_threshold": connection.settings_dict["OPTIONS"].get(
                    "prepare_threshold")})
    if pool.closed:
        await pool.open()  # safe to call again while another caller opens it
    return pool


async def close_pool() -> None:
    """Close the running loop's pool, if it has one (a process or a test ending)."""
    pool = _pools.pop(asyncio.get_running_loop(), None)
    if pool is not None:
        await pool.close()


def _conninfo() -> str:
    """The default database's connection string, as Django connects to it."""
    from psycopg.conninfo import make_conninfo

    database = connection.settings_dict
    options = {name: value for name, value in database["OPTIONS"].items()
               if name not in DJANGO_ONLY_OPTIONS}
    return make_conninfo(dbname=database["NAME"], user=database.get("USER") or None,
                         password=database.get("PASSWORD") or None,
                         host=database.get("HOST") or None,
                         port=str(database["PORT"]) if database.get("PORT") else None,
                         **options)


# OPTIONS of Django's Postgres backend that are not libpq connection parameters.
DJANGO_ONLY_OPTIONS = {"pool", "server_side_binding", "isolation_level", "assume_role",
                       "cursor_factory", "context", "prepare_threshold"}
