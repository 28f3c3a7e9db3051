"""The worker's reads and writes of a response row: claim it, then store its result.

A run is claimed with one conditional UPDATE (queued → in_progress), so a redelivered or
duplicated task never generates twice. The result is committed before the terminal
event is published: a follow-up request made the instant it arrives finds it.
"""
from dataclasses import dataclass
from datetime import datetime, timezone

import orjson
from django.conf import settings
from django.db import connection

from ..history import chain_items
from ..models import ResponseStatus, StoredResponse
from ..translation.chat_request import ChatRequest, build_chat_request


# One statement claims the row and reads what the run needs (Postgres and SQLite both
# support UPDATE … RETURNING).
CLAIM_SQL = """
UPDATE responses SET status = %s WHERE id = %s AND status = %s
RETURNING tenant_id, model, store, background, previous_response_id, request, input_items,
          resource
"""


@dataclass
class RunJob:
    response_id: str
    store: bool
    background: bool
    resource: dict
    chat: ChatRequest
    include: list[str]


def claim_run(response_id: str) -> RunJob | None:
    """Take the queued response for this worker; None if another run has it or it is gone."""
    with connection.cursor() as cursor:
        cursor.execute(CLAIM_SQL, [ResponseStatus.IN_PROGRESS, response_id, ResponseStatus.QUEUED])
        claimed = cursor.fetchone()
    if claimed is None:
        return None
    tenant_id, model, store, background, previous_id, request, input_items, resource = claimed
    request, input_items, resource = (_json(request), _json(input_items), _json(resource))
    items = []
    if previous_id:
        items = chain_items(tenant_id, previous_id) or []
    items.extend(input_items)
    chat = build_chat_request(
        model=model, instructions=request.get("instructions"), items=items,
        params=request["params"], include=request["include"],
        max_tokens_param=settings.UPSTREAM_MAX_TOKENS_PARAM,
    )
    return RunJob(response_id=response_id, store=bool(store), background=bool(background),
                  resource=resource, chat=chat, include=request["include"])


def _json(value):
    """A JSON column as Python data (Postgres hands back objects, SQLite text)."""
    return orjson.loads(value) if isinstance(value, str | bytes) else value


def store_result(job: RunJob, resource: dict) -> None:
    """Commit the finished response (or forget it, for store=false)."""
    if not job.store:
        StoredResponse.objects.filter(id=job.response_id).delete()
        return
    completed_at = resource.get("completed_at")
    usage = resource.get("usage") or {}
    error = resource.get("error") or {}
    StoredResponse.objects.filter(id=job.response_id).update(
        status=resource["status"],
        resource=resource,
        input_tokens=usage.get("input_tokens"),
        output_tokens=usage.get("output_tokens"),
        # the precise time: the response object's `completed_at` is in whole seconds
        completed_at=datetime.now(timezone.utc) if completed_at else None,
        error_code=error.get("code"),
    )


def discard_unstarted(job: RunJob) -> None:
    """A run that failed before it started leaves nothing behind (the client got the error)."""
    StoredResponse.objects.filter(id=job.response_id).delete()
