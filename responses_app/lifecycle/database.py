"""How the lifecycle's hot statements reach the database from an event loop: through
psycopg's async connections, a small pool per event loop, so none waits for a database
thread (a hop to a thread and back wakes a thread, and waits for a free one on a busy
process).

A connection taken from a pool is a live one (pooled_connections.py): one that died idle
through an outage is not the first statement's after it.

A statement is durable (its commit returns once the WAL is on disk) unless its caller
says it need not be: then it goes through the loop's second pool, whose sessions set
Postgres' `synchronous_commit = off`. Such a commit is visible to every session at once,
as any commit; only a crash of the database server in the moment after it (before the
WAL writer flushes it, a fraction of a second) can undo it, together with every later
commit not yet flushed. A durable commit flushes the WAL before it, theirs included.

The process remembers whether its last statement met an outage (`away()`, until one
succeeds): a run that carries its job then claims its response before it calls the
upstream, rather than beside it (worker/run.py), so an outage's runs, answered 503,
send the upstream nothing.
"""
import asyncio

from django.conf import settings
from django.db import connection

from .. import pooled_connections
from ..errors import is_backing_service_outage

# OPTIONS of Django's Postgres backend that are not libpq connection parameters.
DJANGO_ONLY_OPTIONS = {"pool", "server_side_binding", "isolation_level", "assume_role",
                       "cursor_factory", "context", "prepare_threshold"}

_pools: dict = {}  # (event loop, durable) -> psycopg_pool.AsyncConnectionPool
_away = False  # this process's last statement met an outage


async def fetchone(sql: str, params, durable: bool = True) -> tuple | None:
    """Run one statement (autocommit) on the loop's pool; its first row. `durable=False`:
    its commit does not wait for the disk (see above)."""
    global _away
    try:
        async with pooled_connections.connection(await _pool(durable)) as conn:
            cursor = await conn.execute(sql, params)
            row = await cursor.fetchone() if cursor.description else None
    except Exception as exc:
        if is_backing_service_outage(exc):
            _away = True
        raise
    _away = False
    return row


def away() -> bool:
    """Whether this process's last statement met an outage (none has succeeded since)."""
    return _away


def met_outage() -> None:
    """A statement was given up on (its caller's time ran out): as if it met an outage."""
    global _away
    _away = True


async def _pool(durable: bool):
    """The running loop's pool of durable or other sessions (opened on first use)."""
    key = (asyncio.get_running_loop(), durable)
    pool = _pools.get(key)
    if pool is None:
        from psycopg_pool import AsyncConnectionPool

        conninfo = _conninfo() if durable else _conninfo("-c synchronous_commit=off")
        pool = _pools[key] = AsyncConnectionPool(
            conninfo, min_size=1, max_size=settings.DATABASE_LOOP_POOL_SIZE,
            timeout=settings.DATABASE_WAIT_SECONDS,  # as Django's pool (gateway/settings.py)
            reconnect_timeout=settings.DATABASE_RECONNECT_SECONDS,
            open=False, name="loop-rows" if durable else "loop-rows-async-commit", kwargs={
                "autocommit": True, "prepare_threshold": _prepare_threshold()})
    if pool.closed:
        await pool.open()  # safe to call again while another caller opens it
    return pool


def _prepare_threshold() -> int | None:
    """The hot statements are a handful, sent on every request: each is prepared on the
    server the first time a connection sends it (no parsing and planning after that),
    unless DATABASE_LOOP_PREPARED_STATEMENTS is off (a pooler in transaction mode that does
    not keep prepared statements); then Django's own choice (by default none)."""
    if settings.DATABASE_LOOP_PREPARED_STATEMENTS:
        return 0
    return connection.settings_dict["OPTIONS"].get("prepare_threshold")


async def close_pool() -> None:
    """Close the running loop's pools, if it has any (a process or a test ending)."""
    loop = asyncio.get_running_loop()
    for durable in (True, False):
        pool = _pools.pop((loop, durable), None)
        if pool is not None:
            await pool.close()


def _conninfo(session_options: str = "") -> str:
    """The default database's connection string, as Django connects to it (with
    `session_options`, server settings as libpq's `options` gives them, added)."""
    from psycopg.conninfo import make_conninfo

    database = connection.settings_dict
    options = {name: value for name, value in database["OPTIONS"].items()
               if name not in DJANGO_ONLY_OPTIONS}
    if session_options:
        options["options"] = f"{options.get('options', '')} {session_options}".strip()
    return make_conninfo(dbname=database["NAME"], user=database.get("USER") or None,
                         password=database.get("PASSWORD") or None,
                         host=database.get("HOST") or None,
                         port=str(database["PORT"]) if database.get("PORT") else None,
                         **options)
