"""The worker's reads and writes of a response row: claim it, then store its result
(and, for a response in a conversation, append its turn to the conversation).

A run is claimed with one conditional UPDATE (queued → in_progress), so a redelivered or
duplicated task never generates twice (a run sent with its job claims from its loop
instead: loop_rows.py). The result is committed before the terminal
event is published: a follow-up request made the instant it arrives finds it.
"""
import itertools
import time
from dataclasses import dataclass, field

import orjson
from django.conf import settings
from django.db import connection, transaction

from accounting.usage import record_response_usage
from conversations.items import append_items, conversation_items

from ..jobs import JOB_COLUMNS
from ..history import chain_items
from .. import response_rows
from ..models import ResponseStatus, StoredResponse
from ..translation.chat_request import ChatRequest, build_chat_request


# A run of a conversation that ends in these adds its turn to the conversation.
TURN_STATUSES = {ResponseStatus.COMPLETED.value, ResponseStatus.INCOMPLETE.value}

CLAIM_JOB_SQL = response_rows.CLAIM_SQL.format(table=response_rows.TABLE,
                                               columns=", ".join(JOB_COLUMNS))


@dataclass
class RunJob:
    response_id: str
    store: bool
    background: bool
    resource: dict
    chat: ChatRequest
    include: list[str]
    conversation_id: str | None = None
    input_items: list[dict] = field(default_factory=list)
    # What a run of several upstream turns (MCP tools) rebuilds its chat requests from.
    tenant_id: int = 0
    model: str = ""
    request: dict | None = None
    items: list | None = None  # the chain's items, then this response's input items
    input_count: int = 0
    # request id and what the admission must settle (see accounting.ratelimit)
    context: dict = field(default_factory=dict)

    @property
    def cancellable(self) -> bool:
        """Background runs can be cancelled by their client; store=false runs by the relay
        when their client leaves (nobody could ever read the rest)."""
        return self.background or not self.store


def claim_run(response_id: str, worker: str) -> RunJob | None:
    """Take the queued response for this worker; None if another run has it or it is gone."""
    claimed = _claim(CLAIM_JOB_SQL, response_id, worker)
    if claimed is None:
        return None
    return job_of(response_id, dict(zip(JOB_COLUMNS, claimed)))


def claim(response_id: str, worker: str) -> bool:
    """Take the queued response for a run that has its job already; whether it got it."""
    return _claim(response_rows.CLAIM_ID_SQL, response_id, worker) is not None


def _claim(sql: str, response_id: str, worker: str) -> tuple | None:
    """One conditional UPDATE, tried again while the row is not written yet."""
    started = time.monotonic()
    for attempt in itertools.count():
        with connection.cursor() as cursor:
            cursor.execute(sql, [ResponseStatus.IN_PROGRESS, worker, response_id,
                                 ResponseStatus.QUEUED])
            claimed = cursor.fetchone()
            if claimed is not None:
                return claimed
            cursor.execute(response_rows.STATUS_SQL, [response_id])
            row = cursor.fetchone()
        delay = response_rows.claim_retry_delay(attempt, started, row[0] if row else None)
        if delay is None:
            return None
        time.sleep(delay)


def job_of(response_id: str, columns: dict) -> RunJob:
    """The run's job from its row's columns (as claimed, or as the web sent them); reads
    the history of a chain or a conversation."""
    request, input_items, resource = (_json(columns["request"]), _json(columns["input_items"]),
                                      _json(columns["resource"]))
    items = []
    if columns["previous_response_id"]:
        items = chain_items(columns["tenant_id"], columns["previous_response_id"]) or []
    elif columns["conversation_id"]:
        items = conversation_items(columns["conversation_id"])
    items.extend(input_items)
    chat = build_chat_request(
        model=columns["model"], instructions=request.get("instructions"), items=items,
        params=request["params"], include=request["include"],
        max_tokens_param=settings.UPSTREAM_MAX_TOKENS_PARAM,
    )
    return RunJob(response_id=response_id, store=bool(columns["store"]),
                  background=bool(columns["background"]), resource=resource, chat=chat,
                  include=request["include"], conversation_id=columns["conversation_id"],
                  input_items=input_items, tenant_id=columns["tenant_id"],
                  model=columns["model"], request=request, items=items,
                  input_count=len(input_items), context=request.get("context") or {})


def _json(value):
    """A JSON column as Python data (Postgres hands back objects, SQLite text)."""
    return orjson.loads(value) if isinstance(value, str | bytes) else value


def store_result(job: RunJob, resource: dict) -> bool:
    """Commit the finished response (or forget it, for store=false), its usage and its
    conversation turn, atomically, in one transaction (the common case, a stored response
    outside a conversation on Postgres, is one statement from the run loop instead:
    loop_rows.store_result). False when the run no longer owns the row: the watchdog gave
    it up, so its result must be neither stored nor published."""
    with transaction.atomic():
        won = _store(job, resource)
        if won:
            record_response_usage(response_id=job.response_id, tenant_id=job.tenant_id,
                                  api_key_id=job.context.get("api_key_id"), model=job.model,
                                  resource=resource)
            append_to_conversation(job, resource)
        return won


def _store(job: RunJob, resource: dict) -> bool:
    if not job.store:
        owned = StoredResponse.objects.filter(id=job.response_id,
                                              status=ResponseStatus.IN_PROGRESS)
        deleted, _ = owned.delete()
        return bool(deleted)
    return response_rows.store_result(job.response_id, resource,
                                      response_rows.completed_at_of(resource))


def append_to_conversation(job: RunJob, resource: dict) -> None:
    """A completed or incomplete run of a conversation appends its input, then its output.

    Call it in the transaction that stores the result, once that store has won."""
    if job.conversation_id and resource["status"] in TURN_STATUSES:
        append_items(job.conversation_id, job.input_items + list(resource.get("output") or []),
                     response_id=job.response_id)


def discard_unstarted(job: RunJob) -> None:
    """A run that failed before it started leaves nothing behind (the client got the error)."""
    StoredResponse.objects.filter(id=job.response_id).delete()
