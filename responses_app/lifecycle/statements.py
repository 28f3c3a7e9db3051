"""The raw statements of a response row's hot transitions: its creation (web), its claim
by a run (or, for a run that carries its job, its creation as claimed), and its result
(worker), the result together with the response's usage.

Each happens once per request: one statement with orjson costs a fraction of a model save
or a compiled UPDATE with the standard library's JSON encoder (storing a result 0.64 ->
0.22 ms CPU, 1.79 -> 0.9 ms wall: 2026-11-22, c1ad0f0; docs/architecture.md's ledger).
"""
import json
import time
from datetime import datetime, timezone
from functools import lru_cache

import orjson
from django.db import connection

from accounting.usage import USAGE_AFTER_STORE_CTES, token_counts

from ..delivery.jobs import JOB_COLUMNS, Job
from ..models import ResponseStatus, StoredResponse
from ..create.nul import contains_nul, may_hold_nul, without_nul

TABLE = StoredResponse._meta.db_table

INSERT_SQL = f"""
INSERT INTO {TABLE} (id, tenant_id, status, model, store, background, previous_response_id,
                     conversation_id, created_at, request, input_items, resource)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
"""

# A run that carries its job writes its row as claimed; a row already there (written by
# the web) is taken only while queued, so only one run ever gets it. A message without
# its creation time (sent by an earlier version, which wrote the row) takes the claim's.
CLAIM_BY_INSERT_SQL = f"""
INSERT INTO {TABLE} (id, tenant_id, status, model, store, background, previous_response_id,
                     conversation_id, created_at, request, input_items, resource, worker_id)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, COALESCE(%s, now()), %s, %s, %s, %s)
ON CONFLICT (id) DO UPDATE SET status = EXCLUDED.status, worker_id = EXCLUDED.worker_id
WHERE {TABLE}.status = %s
RETURNING id
"""

# A run whose message has no job takes its queued response (conditional: only one run ever
# gets it) and reads its job, with the row's status (its snapshot from before the UPDATE)
# in the same round trip: (status, id, columns...) claimed; (status, NULL...) not; (NULL,
# NULL...) no row yet.
CLAIM_JOB_SQL = f"""
WITH claimed AS (
    UPDATE {TABLE} SET status = %s, worker_id = %s WHERE id = %s AND status = %s
    RETURNING id, {", ".join(JOB_COLUMNS)}
)
SELECT (SELECT status FROM {TABLE} WHERE id = %s), claimed.*
  FROM (SELECT 1) AS one LEFT JOIN claimed ON true
"""
# A claim may find no row yet (a run sent before its row was committed): it looks again,
# for up to this long, while there is no row at all.
CLAIM_WAIT_SECONDS = 5.0
CLAIM_RETRY_DELAYS = (0.002, 0.005, 0.01, 0.02, 0.05)

# Conditional on the run still owning the row (the watchdog may have given it up).
OWNED = "id = %(id)s AND status = %(owned_status)s"
STORE_RESULT_SQL = f"""
UPDATE {TABLE} SET status = %(status)s, resource = %(resource)s,
                   input_tokens = %(row_input_tokens)s, output_tokens = %(row_output_tokens)s,
                   completed_at = %(completed_at)s, error_code = %(error_code)s,
                   first_delta_at = %(first_delta_at)s,
                   upstream_replica = %(upstream_replica)s
WHERE {OWNED}
"""
# The same conditional write (an UPDATE, or for store=false a DELETE) and the
# usage writes (accounting.usage's record_response_usage), one statement: atomic without a
# transaction block, one round trip instead of five.
STORE_WITH_USAGE_SQL = f"""
WITH stored AS ({STORE_RESULT_SQL} RETURNING id, tenant_id, model, status),
{USAGE_AFTER_STORE_CTES}
SELECT count(*) FROM stored
"""
FORGET_WITH_USAGE_SQL = f"""
WITH stored AS (DELETE FROM {TABLE} WHERE {OWNED}
                RETURNING id, tenant_id, model, %(status)s::varchar AS status),
{USAGE_AFTER_STORE_CTES}
SELECT count(*) FROM stored
"""


def claim_job_params(response_id: str, worker: str) -> list:
    """CLAIM_JOB_SQL's parameters."""
    return [ResponseStatus.IN_PROGRESS, worker, response_id, ResponseStatus.QUEUED,
            response_id]


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


@lru_cache(maxsize=1)
def _adapt_datetime():
    """The database's datetime adapter, looked up once: Django's `connection` is
    per-context, and on the worker's run loop every run is a task of its own context, so
    each lookup there built a new (unconnected) database wrapper: ~6% of a run's Python
    outside its socket writes (py-spy, 2026-11-28, bench/README.md's fixed-cost round)."""
    return connection.ops.adapt_datetimefield_value


def completed_at_of(resource: dict) -> datetime | None:
    """When a finished response was stored, precisely (its object's `completed_at` is in
    whole seconds); None if it did not complete."""
    return datetime.now(timezone.utc) if resource.get("completed_at") else None


def json_text(value) -> str:
    """A JSON column's value (orjson; the standard library for integers beyond 64 bits),
    NUL characters replaced (what a tool returned may hold one: jsonb cannot)."""
    try:
        text = orjson.dumps(value).decode()
    except TypeError:
        text = json.dumps(value)
    return json_text(without_nul(value)) if may_hold_nul(text) and contains_nul(value) \
        else text


def insert_params(job: Job, status: str = ResponseStatus.QUEUED.value) -> list:
    """INSERT_SQL's parameters for the new response of `job`."""
    return [job.id, job.tenant_id, status, job.model, job.store,
            job.background, job.previous_response_id, job.conversation_id,
            _adapt_datetime()(job.created_at),
            json_text(job.request), json_text(job.input_items), json_text(job.resource)]


def claim_by_insert_params(job: Job, worker: str) -> list:
    """CLAIM_BY_INSERT_SQL's parameters: the row of `job`, claimed by `worker`."""
    return insert_params(job, ResponseStatus.IN_PROGRESS.value) + [worker,
                                                                  ResponseStatus.QUEUED.value]


def result_params(response_id: str, resource: dict, first_delta_at: datetime | None = None,
                  replica: str | None = None) -> dict:
    """STORE_RESULT_SQL's parameters (`first_delta_at`: when the run published its first
    delta, None if it published none; `replica`: the upstream replica that served it)."""
    usage = resource.get("usage") or {}
    error = resource.get("error") or {}
    adapt = _adapt_datetime()
    return {"status": resource["status"], "resource": json_text(resource),
            "row_input_tokens": usage.get("input_tokens"),
            "row_output_tokens": usage.get("output_tokens"),
            "completed_at": adapt(completed_at_of(resource)),
            "error_code": error.get("code"),
            "first_delta_at": adapt(first_delta_at),
            "id": response_id,
            "owned_status": ResponseStatus.IN_PROGRESS.value, "upstream_replica": replica}


def result_with_usage_params(job: Job, resource: dict,
                             first_delta_at: datetime | None = None) -> dict:
    """STORE_WITH_USAGE_SQL's (and FORGET_WITH_USAGE_SQL's) parameters."""
    return {**result_params(job.id, resource, first_delta_at,
                            getattr(job, "upstream_replica", None)),
            "api_key_id": job.context.get("api_key_id"),
            **token_counts(resource)}
