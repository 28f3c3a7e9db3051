"""The embedded mode's SQLite versions of the statements database.py sends through psycopg
on Postgres: run on a database thread through Django's connection. SQLite has no
statement that claims and reads the row's status at once, so its claim is two.

This module goes when the embedded mode runs on PostgreSQL.
"""
import itertools
import time

from django.db import connection

from . import statements


def execute(sql: str, params) -> None:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


def claim(columns: tuple[str, ...], response_id: str, worker: str) -> tuple | None:
    """The claimed row's `columns`, or None; tried again while the row is not written yet."""
    sql = statements.claim_sql(columns, with_status=False)
    started = time.monotonic()
    for attempt in itertools.count():
        with connection.cursor() as cursor:
            cursor.execute(sql, statements.claim_params(response_id, worker))
            claimed = cursor.fetchone()
            if claimed is not None:
                return claimed
            cursor.execute(statements.STATUS_SQL, [response_id])
            row = cursor.fetchone()
        delay = statements.claim_retry_delay(attempt, started, row[0] if row else None)
        if delay is None:
            return None
        time.sleep(delay)
