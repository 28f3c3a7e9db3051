"""A response's hot transitions, sent from an event loop (database.py): created (queued)
by the web and claimed (in_progress) by one run, or, for a run whose message carries its
job, created by that run as claimed (one INSERT); then finished by that run with its result:
completed, incomplete, failed or cancelled, stored with its usage, or for store=false
forgotten with its usage counted. Ends decided outside the run are in endings.py.

A claim is one conditional UPDATE (queued -> in_progress), so a redelivered or duplicated
message never generates twice; the result is conditional on the run still owning the row
(the watchdog may have failed it), and is committed before the run publishes its terminal
event: a follow-up request made the instant it arrives finds it.

A run that carries its job writes the row itself: the web sends the run and writes
nothing (the request's path is one Redis command, and the row one statement instead of
an INSERT and an UPDATE). No client can ask for the response before the run's first
event, which follows the row; a message lost with Redis would leave no row to clean up.

A foreground response's row and the claim of a run that carries its job do not wait for
the disk (database.py, durable=False): were the database server to crash the moment after,
the run they start, whose client is attached, could not store its result anyway (its
result is durable, and makes them durable with it). A background response's row and an
id-only claim (background runs, chains, redelivered runs) wait: a client that holds only
the id must find it, and a claim lost after its message was acknowledged would leave the
row queued with nothing to run it. A stored result waits: once the client has seen a
response end, its stored result and usage stay. A `store: false` response's end (its row
forgotten, its usage counted) does not: nothing of it can be read back, and only its usage
rows could be lost, to a crash of the database server in the moment after.
"""
import asyncio
import itertools
import time
from datetime import datetime

from django.db import connection, transaction

from accounting.usage import record_response_usage
from conversations.items import append_items

from ..delivery.jobs import JOB_COLUMNS, Job
from ..models import ResponseStatus, StoredResponse
from . import statements
from .database import fetchone

# A run of a conversation that ends in these adds its turn to the conversation.
TURN_STATUSES = {ResponseStatus.COMPLETED.value, ResponseStatus.INCOMPLETE.value}


async def insert_response(job: Job) -> None:
    """INSERT the new response's row, queued (autocommit: committed on return)."""
    await fetchone(statements.INSERT_SQL, statements.insert_params(job),
                   durable=job.background)


async def claim_carried(job: Job, worker: str) -> bool:
    """Write the response's row as claimed by this run, which carries its job (or take the
    row the web wrote, while it is queued); whether it got it."""
    claimed = await fetchone(statements.CLAIM_BY_INSERT_SQL,
                             statements.claim_by_insert_params(job, worker), durable=False)
    return claimed is not None


async def claim_job(response_id: str, worker: str) -> Job | None:
    """Take the queued response and read its job; None if another run has it or it is gone.
    Looks again while the row is not written yet (a run sent before its row was committed)."""
    params = statements.claim_job_params(response_id, worker)
    started = time.monotonic()
    for attempt in itertools.count():
        status, *claimed = await fetchone(statements.CLAIM_JOB_SQL, params)
        if claimed[0] is not None:
            return Job.of_columns(response_id, dict(zip(JOB_COLUMNS, claimed[1:])))
        delay = statements.claim_retry_delay(attempt, started, status)
        if delay is None:
            return None
        await asyncio.sleep(delay)


async def store_result(job: Job, resource: dict, on_thread,
                       first_delta_at: datetime | None = None) -> bool:
    """Store a run's result with its usage (store=false: forget the response, count its
    usage), atomically; a conversation's turn is appended in the same transaction. False
    when the run no longer owns the row: its result must be neither stored nor published.
    `first_delta_at`: when the run published its first delta (None: it published none)."""
    if job.conversation_id:
        return await on_thread(_store_in_transaction, job, resource, first_delta_at)
    sql = statements.STORE_WITH_USAGE_SQL if job.store else statements.FORGET_WITH_USAGE_SQL
    params = statements.result_with_usage_params(job, resource, first_delta_at)
    stored, = await fetchone(sql, params, durable=job.store)
    return stored == 1


def _store_in_transaction(job: Job, resource: dict, first_delta_at: datetime | None) -> bool:
    """store_result on a database thread, for a conversation's turn: its lock and its
    items are more than one statement."""
    with transaction.atomic():
        if job.store:
            with connection.cursor() as cursor:
                cursor.execute(statements.STORE_RESULT_SQL,
                               statements.result_params(
                                   job.id, resource, first_delta_at,
                                   getattr(job, "upstream_replica", None)))
                won = cursor.rowcount == 1
        else:
            won = bool(StoredResponse.objects.filter(
                id=job.id, status=ResponseStatus.IN_PROGRESS).delete()[0])
        if won:
            record_response_usage(response_id=job.id, tenant_id=job.tenant_id,
                                  api_key_id=job.context.get("api_key_id"), model=job.model,
                                  resource=resource)
            if job.conversation_id and resource["status"] in TURN_STATUSES:
                append_items(job.conversation_id,
                             job.input_items + list(resource.get("output") or []),
                             response_id=job.id)
        return won


def count_deleted_run(job: Job, resource: dict) -> bool:
    """After store_result found no row it owns: True when the run's stored response was
    deleted by its owner while it ran (the watchdog fails a stored row, never removes it),
    its usage then counted (the upstream spent it); the run still settles and publishes its
    end, so that its streams end. False: the watchdog ended it in the run's place."""
    if not job.store or StoredResponse.objects.filter(id=job.id).exists():
        return False
    with transaction.atomic():
        record_response_usage(response_id=job.id, tenant_id=job.tenant_id,
                              api_key_id=job.context.get("api_key_id"), model=job.model,
                              resource=resource)
    return True
