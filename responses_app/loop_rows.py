"""A response row's hot statements, sent from an event loop: the web's INSERT of a new
response, and a run's claim (when sent with its job) and result.

On Postgres they go through psycopg's async connections, a small pool per event loop, so
none waits for a database thread (a hop to a thread and back costs milliseconds on a
busy process, each way, and wakes a thread). Elsewhere (SQLite, the embedded mode), and
for a result that is more than one statement (store=false, a conversation's turn), they
run through Django's connection on a database thread, given as `on_thread`. The
statements are the ones that path uses (response_rows, worker.result_store).
"""
import asyncio
import itertools
import time
from functools import lru_cache

from django.conf import settings
from django.db import connection

from .models import ResponseStatus
from .response_rows import (CLAIM_OR_STATUS_SQL, INSERT_SQL, STORE_RESULT_WITH_USAGE_SQL,
                            claim_retry_delay, completed_at_of, insert_params,
                            result_with_usage_params)

POOL_TIMEOUT_SECONDS = 10.0  # as Django's pool (gateway/settings.py)
# OPTIONS of Django's Postgres backend that are not libpq connection parameters.
DJANGO_ONLY_OPTIONS = {"pool", "server_side_binding", "isolation_level", "assume_role",
                       "cursor_factory", "context", "prepare_threshold"}

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
            cursor = await conn.execute(CLAIM_OR_STATUS_SQL, [
                ResponseStatus.IN_PROGRESS, worker, response_id, ResponseStatus.QUEUED,
                response_id])
            claimed, status = await cursor.fetchone()
        if claimed:
            return True
        delay = claim_retry_delay(attempt, started, status)
        if delay is None:
            return False
        await asyncio.sleep(delay)


async def store_result(job, resource: dict, on_thread) -> bool:
    """Store a run's result: a stored response outside a conversation on Postgres (the
    common case) with its usage in one statement, anything else through
    worker.result_store.store_result. Whether the run still owned the response."""
    if not (_on_postgres() and job.store and not job.conversation_id):
        from .worker.result_store import store_result as store_on_thread

        return await on_thread(store_on_thread, job, resource)
    async with (await _pool()).connection() as conn:
        cursor = await conn.execute(STORE_RESULT_WITH_USAGE_SQL, result_with_usage_params(
            job.response_id, resource, completed_at_of(resource), job.context.get("api_key_id")))
        return (await cursor.fetchone())[0] == 1


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
            _conninfo(), min_size=1, max_size=settings.DATABASE_LOOP_POOL_SIZE,
            timeout=POOL_TIMEOUT_SECONDS,
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
