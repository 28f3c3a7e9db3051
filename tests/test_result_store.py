"""The worker's writes of a response row on the test database (Postgres under `make test`):
a run's claim (which may come before the row), then its result, stored with its usage
exactly once, as a run stores it (from an event loop: one statement); a run that no longer owns its row stores and
counts nothing. Transactional: the event loop's connections see what the test wrote."""
import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone

import pytest

from accounting.models import DailyUsage, ResponseUsage
from responses_app.models import ResponseStatus, StoredResponse, Tenant
from responses_app import lifecycle
from responses_app.delivery.jobs import Job
from responses_app.lifecycle.database import close_pool
from responses_app.lifecycle.statements import (CLAIM_RETRY_DELAYS, CLAIM_WAIT_SECONDS,
                                                claim_retry_delay)

pytestmark = pytest.mark.django_db(transaction=True)


def _job(tenant: Tenant, response_id: str, *, store: bool = True) -> Job:
    return Job(
        id=response_id, tenant_id=tenant.id, model="m", store=store, previous_response_id=None,
        background=False, created_at=datetime.now(timezone.utc),
        request={"instructions": None, "params": {}, "include": [], "context": {}},
        input_items=[{"type": "message", "role": "user",
                      "content": [{"type": "input_text", "text": "hi"}]}],
        resource={"id": response_id, "object": "response", "model": "m", "status": "queued",
                  "output": []})


def _queued(tenant: Tenant, response_id: str, *, store: bool = True) -> None:
    _on_a_loop(lifecycle.insert_response(_job(tenant, response_id, store=store)))


def _on_a_loop(coroutine):
    """Run as a run does, from an event loop (a fresh one, its pool closed after)."""
    async def run():
        try:
            return await coroutine
        finally:
            await close_pool()

    return asyncio.run(run())


def claim_run(response_id: str, worker: str):
    return _on_a_loop(lifecycle.claim_job(response_id, worker))


def claim(response_id: str, worker: str) -> bool:
    return _on_a_loop(lifecycle.claim_job(response_id, worker)) is not None


def claim_carried(job: Job, worker: str) -> bool:
    return _on_a_loop(lifecycle.claim_carried(job, worker))


def _finished(job, status: str = "completed", input_tokens: int = 7) -> dict:
    return {**job.resource, "status": status, "completed_at": 1,
            "usage": {"input_tokens": input_tokens, "output_tokens": 5, "total_tokens": 12,
                      "input_tokens_details": {"cached_tokens": 2},
                      "output_tokens_details": {"reasoning_tokens": 3}}}


def store_result(job, resource: dict) -> bool:
    return _on_a_loop(lifecycle.store_result(job, resource, _on_a_thread))


async def _on_a_thread(function, *args):
    return await asyncio.to_thread(_with_connection_closed, function, *args)


def test_a_claimed_result_is_stored_once_with_its_usage():
    tenant = Tenant.objects.create(name="t")
    for response_id in ("resp_a", "resp_b"):
        _queued(tenant, response_id)
    jobs = [claim_run(response_id, "w1") for response_id in ("resp_a", "resp_b")]
    assert claim_run("resp_a", "w2") is None  # claimed already
    assert store_result(jobs[0], _finished(jobs[0])) is True
    assert store_result(jobs[1], _finished(jobs[1], "incomplete", 10)) is True
    assert store_result(jobs[0], _finished(jobs[0])) is False  # not in progress any more

    row = StoredResponse.objects.get(id="resp_b")
    assert (row.status, row.input_tokens, row.output_tokens, row.resource["status"]) == \
        ("incomplete", 10, 5, "incomplete")
    assert row.completed_at is not None
    usage = {u.response_id: (u.status, u.input_tokens, u.cached_tokens, u.output_tokens,
                             u.reasoning_tokens, u.model, u.tenant_id)
             for u in ResponseUsage.objects.all()}
    assert usage == {"resp_a": ("completed", 7, 2, 5, 3, "m", tenant.id),
                     "resp_b": ("incomplete", 10, 2, 5, 3, "m", tenant.id)}
    daily = DailyUsage.objects.get(tenant=tenant)
    assert (daily.day, daily.model, daily.requests, daily.input_tokens, daily.cached_tokens,
            daily.output_tokens, daily.reasoning_tokens) == \
        (datetime.now(timezone.utc).date(), "m", 2, 17, 4, 10, 6)


def test_a_result_given_up_meanwhile_is_neither_stored_nor_counted():
    tenant = Tenant.objects.create(name="t")
    _queued(tenant, "resp_c")
    job = claim_run("resp_c", "w1")
    StoredResponse.objects.filter(id="resp_c").update(status=ResponseStatus.FAILED)  # watchdog
    assert store_result(job, _finished(job)) is False
    assert StoredResponse.objects.get(id="resp_c").status == "failed"
    assert not ResponseUsage.objects.exists() and not DailyUsage.objects.exists()


def test_a_store_false_result_is_forgotten_but_counted():
    tenant = Tenant.objects.create(name="t")
    _queued(tenant, "resp_d", store=False)
    job = claim_run("resp_d", "w1")
    assert store_result(job, _finished(job)) is True
    assert not StoredResponse.objects.filter(id="resp_d").exists()
    assert ResponseUsage.objects.get().response_id == "resp_d"
    assert DailyUsage.objects.get().requests == 1


# --- claims: a run sent without its job can come before the row it claims, so a claim
# looks again while there is no row at all -----------------------------------------------

def test_a_claim_waits_for_a_row_written_after_it_started():
    tenant = Tenant.objects.create(name="t")
    with ThreadPoolExecutor(1) as pool:
        claiming = pool.submit(_with_connection_closed, claim, "resp_late", "w1")
        time.sleep(0.2)
        assert not claiming.done()  # no row yet: it is still looking
        _queued(tenant, "resp_late")
        assert claiming.result(timeout=10) is True
    row = StoredResponse.objects.get(id="resp_late")
    assert (row.status, row.worker_id) == ("in_progress", "w1")


def test_a_claim_from_an_event_loop_waits_for_its_row_too():
    tenant = Tenant.objects.create(name="t")

    async def claim_then_close():
        try:
            return await lifecycle.claim_job("resp_loop", "w2") is not None
        finally:
            await close_pool()

    with ThreadPoolExecutor(1) as pool:
        claiming = pool.submit(asyncio.run, claim_then_close())
        time.sleep(0.2)
        _queued(tenant, "resp_loop")
        assert claiming.result(timeout=10) is True
    assert StoredResponse.objects.get(id="resp_loop").worker_id == "w2"


def test_a_claim_of_a_row_that_is_not_queued_fails():
    tenant = Tenant.objects.create(name="t")
    _queued(tenant, "resp_taken")
    assert claim("resp_taken", "w1") is True
    assert claim("resp_taken", "w2") is False
    StoredResponse.objects.filter(id="resp_taken").update(status=ResponseStatus.CANCELLED)
    assert claim("resp_taken", "w3") is False
    assert StoredResponse.objects.get(id="resp_taken").worker_id == "w1"


def test_a_claim_gives_up_when_no_row_comes():
    started = time.monotonic()
    assert claim_retry_delay(0, started, None) == CLAIM_RETRY_DELAYS[0]
    assert claim_retry_delay(99, started, None) == CLAIM_RETRY_DELAYS[-1]
    assert claim_retry_delay(3, started, "queued") == 0.0  # written meanwhile: at once
    assert claim_retry_delay(0, started, "in_progress") is None
    assert claim_retry_delay(0, started, "cancelled") is None
    assert claim_retry_delay(0, started - CLAIM_WAIT_SECONDS, None) is None


def _with_connection_closed(function, *args):
    """`function(*args)` on this thread, then its database connection closed."""
    from django.db import connection

    try:
        return function(*args)
    finally:
        connection.close()


def test_only_the_result_waits_for_the_disk():
    """The row's creation and its claim commit without waiting for the WAL flush
    (durable=False); the result's statement keeps the server's setting (on by default: it
    waits)."""
    from django.db import connection

    from responses_app.lifecycle.database import fetchone

    async def seen():
        return ((await fetchone("SHOW synchronous_commit", [], durable=False))[0],
                (await fetchone("SHOW synchronous_commit", []))[0])

    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        server_setting, = cursor.fetchone()
    assert _on_a_loop(seen()) == ("off", server_setting)


def test_the_loops_statements_are_prepared_unless_turned_off(settings):
    """The loop pools prepare what they send on the server, unless
    DATABASE_LOOP_PREPARED_STATEMENTS is off (a pooler that does not keep them)."""
    from responses_app.lifecycle.database import fetchone

    def prepared_in_session(durable: bool) -> int:
        return _on_a_loop(fetchone("SELECT count(*) FROM pg_prepared_statements", [],
                                   durable=durable))[0]

    assert prepared_in_session(True) == 1 and prepared_in_session(False) == 1
    settings.DATABASE_LOOP_PREPARED_STATEMENTS = False
    assert prepared_in_session(True) == 0 and prepared_in_session(False) == 0


# --- a run that carries its job writes its row as claimed --------------------------------

def test_a_carried_run_writes_its_row_as_claimed_once():
    tenant = Tenant.objects.create(name="t")
    job = _job(tenant, "resp_carried")
    assert claim_carried(job, "w1") is True
    assert claim_carried(job, "w2") is False  # a duplicated or resent message
    row = StoredResponse.objects.get(id="resp_carried")
    assert (row.status, row.worker_id, row.model, row.created_at) == (
        "in_progress", "w1", "m", job.created_at)
    assert (row.input_items, row.resource) == (job.input_items, job.resource)
    assert store_result(job, _finished(job)) is True
    assert claim_carried(job, "w3") is False  # finished: never run again
    assert StoredResponse.objects.get(id="resp_carried").status == "completed"


def test_a_carried_run_takes_a_queued_row_the_web_wrote_and_no_other():
    tenant = Tenant.objects.create(name="t")
    _queued(tenant, "resp_written")
    assert claim_carried(_job(tenant, "resp_written"), "w1") is True
    assert StoredResponse.objects.get(id="resp_written").worker_id == "w1"
    _queued(tenant, "resp_cancelled")
    StoredResponse.objects.filter(id="resp_cancelled").update(status=ResponseStatus.CANCELLED)
    assert claim_carried(_job(tenant, "resp_cancelled"), "w1") is False
    row = StoredResponse.objects.get(id="resp_cancelled")
    assert (row.status, row.worker_id) == ("cancelled", None)


def test_a_result_holding_a_nul_is_stored_with_it_replaced():
    """What a tool returned may hold NUL, which jsonb cannot: replaced, the result stored."""
    tenant = Tenant.objects.create(name="t")
    _queued(tenant, "resp_nul")
    job = claim_run("resp_nul", "w1")
    output = [{"type": "mcp_call", "id": "mcp_1", "output": "bin\x00ary", "name": "n\x00"}]
    assert store_result(job, {**_finished(job), "output": output}) is True
    stored = StoredResponse.objects.get(id="resp_nul").resource["output"]
    assert stored == [{"type": "mcp_call", "id": "mcp_1", "output": "bin\ufffdary",
                       "name": "n\ufffd"}]
