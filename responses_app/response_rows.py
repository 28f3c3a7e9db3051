"""The hot path's two writes of a response row, each one raw statement: its creation (web)
and its result (worker).

Both happen once per request. Through the ORM they cost a model save or a compiled
UPDATE and the standard library's JSON encoder for the JSON columns; one statement with
orjson does the same for a fraction (Postgres and SQLite alike).
"""
import json
from datetime import datetime

import orjson
from django.db import connection

from .models import ResponseStatus, StoredResponse

TABLE = StoredResponse._meta.db_table

INSERT_SQL = f"""
INSERT INTO {TABLE} (id, tenant_id, status, model, store, background, previous_response_id,
                     conversation_id, created_at, request, input_items, resource)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
"""

# Conditional on the run still owning the row (the watchdog may have given it up).
STORE_RESULT_SQL = f"""
UPDATE {TABLE} SET status = %s, resource = %s, input_tokens = %s, output_tokens = %s,
                   completed_at = %s, error_code = %s
WHERE id = %s AND status = %s
"""


def json_text(value) -> str:
    """A JSON column's value (orjson; the standard library for integers beyond 64 bits)."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return json.dumps(value)


def insert_response(row: StoredResponse) -> StoredResponse:
    """INSERT the new row (autocommit: atomic, committed on return); the instance, saved."""
    with connection.cursor() as cursor:
        cursor.execute(INSERT_SQL, [
            row.id, row.tenant_id, row.status, row.model, row.store, row.background,
            row.previous_response_id, row.conversation_id,
            connection.ops.adapt_datetimefield_value(row.created_at),
            json_text(row.request), json_text(row.input_items), json_text(row.resource)])
    row._state.adding = False
    row._state.db = connection.alias
    return row


def store_result(response_id: str, resource: dict, completed_at: datetime | None) -> bool:
    """Write a finished run's response object and its summary columns, if the run still
    owns the row (it is `in_progress`); whether it did."""
    usage = resource.get("usage") or {}
    error = resource.get("error") or {}
    with connection.cursor() as cursor:
        cursor.execute(STORE_RESULT_SQL, [
            resource["status"], json_text(resource), usage.get("input_tokens"),
            usage.get("output_tokens"), connection.ops.adapt_datetimefield_value(completed_at),
            error.get("code"), response_id, ResponseStatus.IN_PROGRESS.value])
        return cursor.rowcount == 1
