"""Writes on the request side: create a response (prepare it, then send its run, after
writing its row unless the run writes it), cancel one, delete one (with its event stream)."""
import logging
import time
from datetime import datetime, timezone

from django.conf import settings

from conversations.services import conversation_check_input
from mcp_tools.services import mcp_request_prepare
from prompts.services import apply_prompt

from . import lifecycle
from .bus import event_bus
from .delivery.cancellation import cancellation
from .create.request import CreateRequest
from .db_threads import run_db
from .delivery.dispatch import dispatcher
from .errors import InvalidRequest, NotFound
from .ids import new_id
from .create.item_references import resolve_item_references
from .delivery.jobs import Job
from .models import TERMINAL_STATUSES, ResponseStatus, StoredResponse, Tenant
from .reasoning_token import unsealed
from .create.tool_outputs import check_tool_outputs
from .translation.resource import new_response_resource

log = logging.getLogger(__name__)
LOOKUP_ITEM_TYPES = {"item_reference", "mcp_approval_response"}


def needs_lookups(create: CreateRequest) -> bool:
    """Whether creating this response reads (or writes) stored state besides its own row:
    a chain, a conversation, referenced items, MCP servers and approvals. Such a request
    is prepared on a database thread, and its run reads its history when it starts."""
    continues_stored = create.previous_response_id and create.history is None
    return bool(continues_stored or create.conversation_id or create.params.get("prompt")
                or any(item["type"] in LOOKUP_ITEM_TYPES for item in create.input_items)
                or any(tool["type"] == "mcp" for tool in create.params.get("tools") or ()))


def response_prepare(tenant: Tenant, create: CreateRequest,
                     context: dict | None = None) -> Job:
    """Check the request against what is stored and build the queued response's job, which
    is also its row (pure unless `needs_lookups`). Its run's message carries it
    (`job.carried`, and the run writes the row) when a client waits for its first event,
    the run reads nothing stored and the job fits a message; otherwise, when a client
    waits (`job.awaited`: not background), the message says so (delivery.jobs.Awaited), so
    that its run gives up on its claim through a database outage in time. A background run
    waits for its claim (cancelled while queued, it must never reach the upstream), through
    an outage too (its client holds its id, or follows its stream). `context`
    travels with the run (request id, what its admission must settle)."""
    if create.params.get("prompt"):
        apply_prompt(tenant, create)
    previous = create.previous_response_id
    if previous and create.history is None and not _is_stored(tenant, previous):
        raise InvalidRequest(f"Previous response with id '{previous}' not found.",
                             param="previous_response_id", code="previous_response_not_found")
    if create.conversation_id:
        conversation_check_input(tenant, create.conversation_id, create.input_items)
    input_items = [unsealed(item) for item in resolve_item_references(tenant, create)]
    check_tool_outputs(tenant, create, input_items)
    history = create.history
    if history is not None and create.store:
        # A stored response continuing one that was not: a stored chain starts here, so it
        # keeps what it continued as its own input (what a later continuation reads back).
        input_items, history = history + input_items, []
    created_at = time.time()
    response_id = new_id("resp")
    mcp_request_prepare(tenant, create, response_id)
    resource = new_response_resource(
        response_id=response_id, created_at=int(created_at), model=create.model,
        params=create.params, instructions=create.instructions,
        previous_response_id=previous, store=create.store, background=create.background,
        status=ResponseStatus.QUEUED.value, conversation_id=create.conversation_id,
    )
    job = Job(
        id=response_id, tenant_id=tenant.id, model=create.model, store=create.store,
        background=create.background, previous_response_id=previous,
        conversation_id=create.conversation_id,
        created_at=datetime.fromtimestamp(created_at, timezone.utc),
        request=_run_request(create, context, history),
        input_items=input_items, resource=resource)
    job.awaited = not create.background  # its run's message says so when it has no job
    job.carried = job.awaited and not needs_lookups(create) and job.carriable()
    return job


def _run_request(create: CreateRequest, context: dict | None, history: list | None) -> dict:
    """The job's `request`: what its run needs besides the input (and the history it
    continues, when the front door supplied it: the run reads no chain then)."""
    request = {"instructions": create.instructions, "params": create.params,
               "include": create.include, "context": context or {}}
    if history is not None:
        request["history"] = history
    return request


async def response_start(job: Job):
    """Send the response's run: a run that carries its job writes the row itself as it
    claims it (lifecycle.claim_carried); otherwise write the row first, so that the
    worker's claim finds it (a claim that comes first must look again later). The row is
    one INSERT in autocommit (atomic by itself); if the run cannot be sent, it is removed.
    Returns what `response_withdraw` takes back."""
    if job.carried:
        return await dispatcher().send(job)
    await lifecycle.insert_response(job)
    try:
        return await dispatcher().send(job)
    except Exception:
        try:
            await run_db(lifecycle.forget_unsent, job.id)
        except Exception as exc:  # the database is away too: the row stays queued
            log.warning("response %s: its run was not sent and its row remains: %s",
                        job.id, exc)
        raise


async def response_withdraw(job: Job, sent) -> bool:
    """Take back a run its client gave up on before any worker took it (`sent`: what
    `response_start` returned): it never runs, and the row written for it (a run that does
    not carry its job) is removed. False if a worker has it already."""
    if not await dispatcher().withdraw(sent):
        return False
    if not job.carried:
        await run_db(lifecycle.forget_unsent, job.id)
    return True


def response_cancel(tenant: Tenant, response_id: str) -> dict:
    """Cancel a background response; the response object as it ends up.

    Queued: cancelled here, with one conditional UPDATE (a worker's claim then finds
    nothing), and its event stream ended. Running: the run is asked to stop, and we wait
    (up to CANCEL_WAIT_SECONDS) for it to store what it produced. Finished: unchanged.
    """
    row = _stored_row(tenant, response_id)
    if not row.background:
        raise InvalidRequest("Only responses created with background=true can be cancelled.",
                             code="invalid_request")
    if row.status in TERMINAL_STATUSES:
        return row.resource
    if row.status == ResponseStatus.QUEUED:
        resource = lifecycle.cancel_queued(row)
        if resource is not None:
            return resource
    cancellation().request_cancel(response_id)
    deadline = time.monotonic() + settings.CANCEL_WAIT_SECONDS
    while time.monotonic() < deadline:
        row = _stored_row(tenant, response_id)
        if row.status in TERMINAL_STATUSES:
            return row.resource
        time.sleep(0.05)
    return {**row.resource, "status": row.status}


def _stored_row(tenant: Tenant, response_id: str) -> StoredResponse:
    row = (StoredResponse.objects.filter(id=response_id, tenant=tenant, store=True)
           .only("id", "tenant_id", "status", "background", "request", "resource").first())
    if row is None:
        raise NotFound(f"No response found with id '{response_id}'.")
    return row


def response_delete(tenant: Tenant, response_id: str) -> None:
    """Delete a stored response and its event stream."""
    deleted, _ = StoredResponse.objects.filter(id=response_id, tenant=tenant, store=True).delete()
    if not deleted:
        raise NotFound(f"No response found with id '{response_id}'.")
    event_bus().delete(response_id)


def _is_stored(tenant: Tenant, response_id: str) -> bool:
    return StoredResponse.objects.filter(id=response_id, tenant=tenant, store=True).exists()
