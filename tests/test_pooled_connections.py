"""A pool hands out no connection that died while it sat idle (responses_app/
pooled_connections.py), on the test database: every pooled connection's server session
ended (pg_terminate_backend: the server closes them, as a restart does), the next statement
through Django's pool, and through an event loop's, is served on a new session instead of
failing on a dead one (tests/test_e2e_faults.py: the same after a silent partition). Each
connection discarded is logged once, by us (psycopg_pool's own line for it left out)."""
import asyncio
import logging

import psycopg
import pytest
from django.db import connection

from responses_app.lifecycle import database
from tests.test_e2e_durable import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

BACKEND = "SELECT pg_backend_pid()"


def sessions_ended() -> set[int]:
    """End every other session on the test database; the ones ended, once they are gone."""
    with psycopg.connect(**connection.get_connection_params(), autocommit=True) as admin:
        ended = {pid for pid, in admin.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid()").fetchall()}
        admin.execute("SELECT pg_terminate_backend(pid) FROM unnest(%s::int[]) AS pid",
                      [list(ended)])
        wait_for(lambda: not admin.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(%s)",
            [list(ended)]).fetchone()[0], "the ended sessions to be gone")
    return ended


def discards_logged(caplog, pool_name: str, discarded: int) -> None:
    """The warnings logged are one line per connection `discarded` (by the pool's count of
    connections given back closed), ours: psycopg_pool's own for it is left out."""
    assert discarded >= 1
    assert [(record.name, record.levelname, record.getMessage())
            for record in caplog.records] == [(
        "responses_app.pooled_connections", "WARNING",
        f"pool '{pool_name}': discarding a dead connection (terminating connection due to "
        "administrator command); taking another")] * discarded


def test_django_takes_a_live_connection_after_the_pooled_ones_died(caplog):
    with connection.cursor() as cursor:
        cursor.execute(BACKEND)
        before = cursor.fetchone()[0]
    connection.close()  # back to the pool, idle
    ended = sessions_ended()
    connection.pool.pop_stats()
    with caplog.at_level(logging.WARNING):
        with connection.cursor() as cursor:
            cursor.execute(BACKEND)
            after = cursor.fetchone()[0]
    assert before in ended
    assert after not in ended
    discards_logged(caplog, connection.pool.name, connection.pool.get_stats()["returns_bad"])


def test_an_event_loop_takes_a_live_connection_after_the_pooled_ones_died(caplog):
    async def backends():
        try:
            before = (await database.fetchone(BACKEND, None))[0]
            ended = await asyncio.to_thread(sessions_ended)
            pool = await database._pool(durable=True)  # fetchone's
            pool.pop_stats()
            with caplog.at_level(logging.WARNING):
                after = (await database.fetchone(BACKEND, None))[0]
            return before, ended, after, pool.name, pool.get_stats()["returns_bad"]
        finally:
            await database.close_pool()

    before, ended, after, pool_name, discarded = asyncio.run(backends())
    assert before in ended
    assert after not in ended
    discards_logged(caplog, pool_name, discarded)
