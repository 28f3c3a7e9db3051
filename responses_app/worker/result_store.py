"""The worker's reads and writes of a response row: claim it, then store its result.

A run is claimed with one conditional UPDATE (queued → in_progress), so a redelivered or
duplicated task never generates twice. The result is committed before the terminal
event is published: a follow-up request made the instant it arrives finds it.
"""
from dataclasses import dataclass
from datetime import datetime, timezone

from django.conf import settings

from ..history import chain_items
from ..models import ResponseStatus, StoredResponse
from ..translation.chat_request import ChatRequest, build_chat_request


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
    claimed = StoredResponse.objects.filter(
        id=response_id, status=ResponseStatus.QUEUED
    ).update(status=ResponseStatus.IN_PROGRESS)
    if not claimed:
        return None
    row = StoredResponse.objects.get(id=response_id)
    items = []
    if row.previous_response_id:
        items = chain_items(row.tenant_id, row.previous_response_id) or []
    items.extend(row.input_items)
    request = row.request
    chat = build_chat_request(
        model=row.model, instructions=request.get("instructions"), items=items,
        params=request["params"], include=request["include"],
        max_tokens_param=settings.UPSTREAM_MAX_TOKENS_PARAM,
    )
    return RunJob(response_id=row.id, store=row.store, background=row.background,
                  resource=row.resource, chat=chat, include=request["include"])


def store_result(job: RunJob, resource: dict) -> None:
    """Commit the finished response (or forget it, for store=false)."""
    if not job.store:
        StoredResponse.objects.filter(id=job.response_id).delete()
        return
    completed_at = resource.get("completed_at")
    error = resource.get("error") or {}
    StoredResponse.objects.filter(id=job.response_id).update(
        status=resource["status"],
        resource=resource,
        completed_at=datetime.fromtimestamp(completed_at, timezone.utc) if completed_at else None,
        error_code=error.get("code"),
    )


def discard_unstarted(job: RunJob) -> None:
    """A run that failed before it started leaves nothing behind (the client got the error)."""
    StoredResponse.objects.filter(id=job.response_id).delete()
