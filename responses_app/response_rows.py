"""The hot path's writes of a response row, each one raw statement: its creation (web),
its claim by a run, and its result (worker; on Postgres together with the response's
usage).

Each happens once per request. Through the ORM they cost a model save or a compiled
UPDATE and the standard library's JSON encoder for the JSON columns; one statement with
orjson does the same for a fraction (Postgres and SQLite alike).
"""
import json
import time
from datetime import datetime, timezone

import orjson
from django.db import connection

from accounting.usage import USAGE_AFTER_STORE_CTES, token_counts

from .models import ResponseStatus, StoredResponse

TABLE = StoredResponse._meta.db_table

INSERT_SQL = f"""
INSERT INTO {TABLE} (id, tenant_id, status, model, store, background, previous_response_id,
                     conversation_id, created_at, request, input_items, resource)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
"""

# A run takes its queued response (conditional: only one run ever gets it), reading the
# columns given (the job's, or just the id when the run has its job already).
CLAIM_SQL = """
UPDATE {table} SET status = %s, worker_id = %s WHERE id = %s AND status = %s
RETURNING {columns}
"""
CLAIM_ID_SQL = CLAIM_SQL.format(table=TABLE, columns="id")
STATUS_SQL = f"SELECT status FROM {TABLE} WHERE id = %s"
# Postgres: a claim and, when it finds no queued row, the row's status (its snapshot from
# before the UPDATE), in one round trip: (1, 'queued') claimed; (0, status) not; (0, NULL)
# no row yet.
CLAIM_OR_STATUS_SQL = f"""
WITH claimed AS ({CLAIM_ID_SQL})
SELECT (SELECT count(*) FROM claimed), (SELECT status FROM {TABLE} WHERE id = %s)
"""
# A claim can come before the row it claims: the web writes the row and sends the run at
# the same time. It looks again, for up to this long, while there is no row at all.
CLAIM_WAIT_SECONDS = 5.0
CLAIM_RETRY_DELAYS = (0.002, 0.005, 0.01, 0.02, 0.05)

# Conditional on the run still owning the row (the watchdog may have given it up).
STORE_RESULT_SQL = f"""
UPDATE {TABLE} SET status = %(status)s, resource = %(resource)s,
                   input_tokens = %(row_input_tokens)s, output_tokens = %(row_output_tokens)s,
                   completed_at = %(completed_at)s, error_code = %(error_code)s
WHERE id = %(id)s AND status = %(owned_status)s
"""

# Postgres: the same conditional UPDATE and the usage writes (accounting.usage's
# record_response_usage), one statement: atomic without a transaction block, one round
# trip instead of five.
STORE_RESULT_WITH_USAGE_SQL = f"""
WITH stored AS ({STORE_RESULT_SQL} RETURNING id, tenant_id, model, status),
{USAGE_AFTER_STORE_CTES}
SELECT count(*) FROM stored
"""


def claim_retry_delay(attempt: int, started: float, status: str | None) -> float | None:
    """After a claim that found no queued row: seconds to wait before trying again (0: at
    once), or None to give up. `status` is the row's status now, None while it has no row."""
    if time.monotonic() - started >= CLAIM_WAIT_SECONDS:
        return None
    if status is None:  # not written yet
        return CLAIM_RETRY_DELAYS[min(attempt, len(CLAIM_RETRY_DELAYS) - 1)]
    if status == ResponseStatus.QUEUED:
        return 0.0  # written just after the claim looked
    return None  # another run has it, or it was cancelled


def completed_at_of(resource: dict) -> datetime | None:
    """When a finished response was stored, precisely (its object's `completed_at` is in
    whole seconds); None if it did not complete."""
    return datetime.now(timezone.utc) if resource.get("completed_at") else None


def json_text(value) -> str:
    """A JSON column's value (orjson; the standard library for integers beyond 64 bits)."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return json.dumps(value)


def insert_response(row: StoredResponse) -> StoredResponse:
    """INSERT the new row (autocommit: atomic, committed on return); the instance, saved."""
    with connection.cursor() as cursor:
        cursor.execute(INSERT_SQL, insert_params(row, connection.ops))
    row._state.adding = False
    row._state.db = connection.alias
    return row


def insert_params(row: StoredResponse, ops) -> list:
    """INSERT_SQL's parameters for `row` (`ops`: the database's connection.ops)."""
    return [row.id, row.tenant_id, row.status, row.model, row.store, row.background,
            row.previous_response_id, row.conversation_id,
            ops.adapt_datetimefield_value(row.created_at),
            json_text(row.request), json_text(row.input_items), json_text(row.resource)]


def store_result(response_id: str, resource: dict, completed_at: datetime | None) -> bool:
    """Write a finished run's response object and its summary columns, if the run still
    owns the row (it is `in_progress`); whether it did."""
    with connection.cursor() as cursor:
        cursor.execute(STORE_RESULT_SQL, _result_params(response_id, resource, completed_at))
        return cursor.rowcount == 1


def result_with_usage_params(response_id: str, resource: dict, completed_at: datetime | None,
                             api_key_id: int | None) -> dict:
    """STORE_RESULT_WITH_USAGE_SQL's parameters."""
    return {**_result_params(response_id, resource, completed_at), "api_key_id": api_key_id,
            **token_counts(resource)}


def _result_params(response_id: str, resource: dict, completed_at: datetime | None) -> dict:
    usage = resource.get("usage") or {}
    error = resource.get("error") or {}
    return {"status": resource["status"], "resource": json_text(resource),
            "row_input_tokens": usage.get("input_tokens"),
            "row_output_tokens": usage.get("output_tokens"),
            "completed_at": connection.ops.adapt_datetimefield_value(completed_at),
            "error_code": error.get("code"), "id": response_id,
            "owned_status": ResponseStatus.IN_PROGRESS.value}
