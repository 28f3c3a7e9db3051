"""How the lifecycle's hot statements reach the database from an event loop: through
psycopg's async connections, a small pool per event loop, so none waits for a database
thread (a hop to a thread and back wakes a thread, and waits for a free one on a busy
process)."""
import asyncio

from django.conf import settings
from django.db import connection

POOL_TIMEOUT_SECONDS = 10.0  # as Django's pool (gateway/settings.py)
# OPTIONS of Django's Postgres backend that are not libpq connection parameters.
DJANGO_ONLY_OPTIONS = {"pool", "server_side_binding", "isolation_level", "assume_role",
                       "cursor_factory", "context", "prepare_threshold"}

_pools: dict = {}  # event loop -> psycopg_pool.AsyncConnectionPool


async def fetchone(sql: str, params) -> tuple | None:
    """Run one statement (autocommit) on the loop's pool; its first row."""
    async with (await _pool()).connection() as conn:
        cursor = await conn.execute(sql, params)
        return await cursor.fetchone() if cursor.description else None


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
