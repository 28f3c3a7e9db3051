"""A Postgres connection taken from a pool is a live one: one that lost its server while
it sat idle in the pool is discarded and the next one taken at once, so the first request
after a database outage heals is served instead of failing on a dead connection. Used by
Django's pool (gateway/postgres/base.py) and by the event loops' (lifecycle/database.py).

A silent partition (packets dropped, nothing refused) that outlasts a pooled connection's
keepalive probes (after 10 s idle, DATABASE_TCP_TIMEOUT_SECONDS unanswered:
gateway/database_options.py) has its kernel give the connection up; the pool still holds
it, as it holds one the server closed (a restart, pg_terminate_backend) and does not know
it until a statement fails on it. Before this, the first requests after such a cut were
answered 503 in each of four runs (tests/test_e2e_faults.py): by the web (a statement of
its own on a dead connection), or, the workers alone cut 12 s or more, by the worker (its
route read on one). Checking a connection costs 1.2 us (3.6 against 2.4 us a
getconn/putconn, loopback); psycopg_pool's round-trip check 72-82 us.

The check costs one poll() of the socket, no round trip: an idle connection's socket has
nothing to read unless its peer closed or reset it, its kernel gave it up (an error), or
the server sent something unasked (a notice, a TLS record); only then does psycopg_pool's
own check (a round trip) decide. psycopg_pool's `check` callback (Django's
CONN_HEALTH_CHECKS) checks each connection with a round trip, and after a failed check
waits a second, doubling, before it takes the next: an outage that killed every idle
connection would hold the first request for seconds, then answer it 503.
"""
import logging
import select
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar

import psycopg
from psycopg_pool import AsyncConnectionPool, ConnectionPool

log = logging.getLogger(__name__)

# psycopg_pool logs a connection given back closed ("discarding closed connection: <its
# repr>"); one discarded here is said once, by `_discarded`'s line (the pool's name, why)
_DISCARDING = ContextVar("discarding", default=False)
_POOLS_LINE = "discarding closed connection: %s"


class _SaidOnce(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not (_DISCARDING.get() and record.msg == _POOLS_LINE)


logging.getLogger("psycopg.pool").addFilter(_SaidOnce())


def taken(pool: ConnectionPool, take):
    """A live connection from `pool`, `take()` being how one is taken from it (its
    `getconn`, or what wraps it): a dead one is discarded (the pool connects a new one in
    its place) and the next taken, up to the pool's size; then whatever comes next."""
    for _ in range(pool.max_size):
        connection = take()
        error = None if _quiet(connection) else _check_failed(connection)
        if error is None:
            return connection
        with _discarded(pool, error):
            connection.close()
            pool.putconn(connection)  # dropped, another connected in its place
    return take()


@asynccontextmanager
async def connection(pool: AsyncConnectionPool):
    """`pool.connection()`, of a live connection (as `taken`)."""
    conn = await _taken_async(pool)
    try:
        async with conn:
            yield conn
    finally:
        await pool.putconn(conn)


async def _taken_async(pool: AsyncConnectionPool):
    for _ in range(pool.max_size):
        conn = await pool.getconn()
        error = None if _quiet(conn) else await _check_failed_async(conn)
        if error is None:
            return conn
        with _discarded(pool, error):
            await conn.close()
            await pool.putconn(conn)  # dropped, another connected in its place
    return await pool.getconn()


@contextmanager
def _discarded(pool: ConnectionPool | AsyncConnectionPool, error: psycopg.Error):
    """A dead connection of `pool` (its check failed with `error`) discarded in the block:
    one line says so (psycopg_pool's own, as it is given back closed, is left out)."""
    log.warning("pool %r: discarding a dead connection (%s); taking another", pool.name,
                (str(error) or type(error).__name__).splitlines()[0])
    discarding = _DISCARDING.set(True)
    try:
        yield
    finally:
        _DISCARDING.reset(discarding)


def _quiet(connection: psycopg.Connection | psycopg.AsyncConnection) -> bool:
    """Whether the idle connection's socket has nothing to read and no error or hang-up
    (poll(), not select(): a busy process's descriptors go past select()'s 1024)."""
    if connection.closed:
        return False
    poller = select.poll()
    poller.register(connection.fileno(), select.POLLIN | select.POLLPRI)
    return not poller.poll(0)


def _check_failed(connection: psycopg.Connection) -> psycopg.Error | None:
    """psycopg_pool's check of `connection` (a round trip): its error, None if it passed."""
    try:
        ConnectionPool.check_connection(connection)
    except psycopg.Error as error:
        return error
    return None


async def _check_failed_async(connection: psycopg.AsyncConnection) -> psycopg.Error | None:
    try:
        await AsyncConnectionPool.check_connection(connection)
    except psycopg.Error as error:
        return error
    return None

