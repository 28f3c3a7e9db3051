"""A finished chat completion committed: its row (if `store`) and its usage (always: a chat
completion counts against the tenant's quota as a response does), atomically; the usage
alone of a run that ended without its completion (failed, or cancelled: cut_call.py).

On Postgres it is one statement (the row's INSERT, or a one-row SELECT when not stored,
then accounting.usage's USAGE_AFTER_STORE_CTES), as a response's store is: one round
trip instead of four (BEGIN, the usage row, the day's row, COMMIT) on the way to the
completion's end. Elsewhere the ORM writes them in a transaction.
"""
from datetime import datetime, timezone

import orjson
from django.db import connection, transaction

from accounting.usage import USAGE_AFTER_STORE_CTES, record_response_usage, token_counts

from ..jobs import ChatJob
from ..models import StoredChatCompletion

TABLE = StoredChatCompletion._meta.db_table
STORED_ROW = f"""
INSERT INTO {TABLE} (id, tenant_id, model, created_at, metadata, request_messages, completion)
VALUES (%(id)s, %(tenant_id)s, %(model)s, %(created_at)s, %(metadata)s::jsonb,
        %(messages)s::jsonb, %(completion)s::jsonb)
RETURNING id, tenant_id, model, 'completed'::varchar AS status
"""
UNSTORED_ROW = """
SELECT %(id)s::varchar AS id, %(tenant_id)s::bigint AS tenant_id,
       %(model)s::varchar AS model, %(status)s::varchar AS status
"""
STATEMENT = "WITH stored AS ({row}), {usage} SELECT count(*) FROM stored"
STORE_SQL = STATEMENT.format(row=STORED_ROW, usage=USAGE_AFTER_STORE_CTES)
USAGE_SQL = STATEMENT.format(row=UNSTORED_ROW, usage=USAGE_AFTER_STORE_CTES)


def store_completion(job: ChatJob, completion: dict) -> int:
    """Commit the completion and its usage; the tokens it used."""
    resource = usage_resource(completion)
    if connection.vendor != "postgresql":
        return _store_with_orm(job, completion, resource)
    counts = token_counts(resource)
    params = {"id": job.id, "tenant_id": job.tenant_id, "model": job.model,
              "api_key_id": job.context.get("api_key_id"), "status": "completed", **counts}
    if job.store:
        params.update(created_at=datetime.fromtimestamp(job.created_at, timezone.utc),
                      metadata=orjson.dumps(job.metadata).decode(),
                      messages=orjson.dumps(job.messages).decode(),
                      completion=orjson.dumps({**completion, "metadata": job.metadata}).decode())
    with connection.cursor() as cursor:
        cursor.execute(STORE_SQL if job.store else USAGE_SQL, params)
    return counts["input_tokens"] + counts["output_tokens"]


def record_usage(job: ChatJob, usage: dict, status: str) -> int:
    """Commit the usage of a run that ended without its completion (`status`: `failed` or
    `cancelled`; nothing else is stored); the tokens it used."""
    resource = usage_resource({"usage": usage}, status)
    if connection.vendor != "postgresql":
        return _store_with_orm(job, None, resource)
    counts = token_counts(resource)
    with connection.cursor() as cursor:
        cursor.execute(USAGE_SQL, {"id": job.id, "tenant_id": job.tenant_id, "model": job.model,
                                   "api_key_id": job.context.get("api_key_id"),
                                   "status": status, **counts})
    return counts["input_tokens"] + counts["output_tokens"]


def _store_with_orm(job: ChatJob, completion: dict | None, resource: dict) -> int:
    with transaction.atomic():
        if job.store and completion is not None:
            StoredChatCompletion.objects.create(
                id=job.id, tenant_id=job.tenant_id, model=job.model,
                created_at=datetime.fromtimestamp(job.created_at, timezone.utc),
                metadata=job.metadata, request_messages=job.messages,
                completion={**completion, "metadata": job.metadata})
        return record_response_usage(response_id=job.id, tenant_id=job.tenant_id,
                                     api_key_id=job.context.get("api_key_id"), model=job.model,
                                     resource=resource)


def usage_resource(completion: dict, status: str = "completed") -> dict:
    """The completion's usage in the Responses names accounting.usage reads."""
    usage = completion.get("usage") or {}
    return {"status": status, "usage": {
        "input_tokens": usage.get("prompt_tokens") or 0,
        "input_tokens_details": {"cached_tokens": (usage.get("prompt_tokens_details") or {})
                                 .get("cached_tokens") or 0},
        "output_tokens": usage.get("completion_tokens") or 0,
        "output_tokens_details": {"reasoning_tokens": (usage.get("completion_tokens_details")
                                                       or {}).get("reasoning_tokens") or 0}}}
