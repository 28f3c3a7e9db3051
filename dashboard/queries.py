"""The dashboard's aggregate statements: over stored responses (only indexed columns and
timestamps, no JSON, from a created_at range: the `responses_created` index, or
`responses_tenant_usage` for one tenant) and over the rollups of closed buckets
(rollup.py) joined to them.

- COUNTS_SQL: responses and tokens by bucket, tenant, model, status and error code (what a
  rollup stores);
- LATENCY_SQL: percentiles of time to first delta and total latency by bucket (and by
  bucket and tenant, for a rollup);
- SUMMARY_SQL, PAGE_LATENCY_SQL: what the page shows, each in one statement: per bucket
  and status, per tenant, per model and per error code (GROUPING SETS) from the window's
  own rollups until `hours_since`, then hour rollups (the open days of the 30-day window)
  until `raw_since`, then the responses; and the latency per bucket, from the window's
  own rollups until `latency_since`, then the responses (percentiles do not add up).

Buckets are UTC (`date_trunc` of the UTC time, read back as timestamptz).
"""
from datetime import datetime

from django.db import connection

BUCKET = "(date_trunc(%(unit)s, created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')"
RAW_RANGE = "created_at >= %(raw_since)s AND created_at < %(until)s {tenant}"
LATENCY_RANGE = "created_at >= %(latency_since)s AND created_at < %(until)s {tenant}"

# A row: (bucket, tenant_id, model, status, error_code or '', responses, input, output).
COUNTS_SQL = f"""
SELECT {BUCKET} AS bucket, tenant_id, model, status, coalesce(error_code, '') AS error_code,
       count(*), coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0)
  FROM responses
 WHERE {RAW_RANGE}
 GROUP BY 1, 2, 3, 4, 5
"""

# Milliseconds from creation to the first delta (responses that published one) and to
# completion (completed responses); percentile_cont ignores the NULLs of the others.
FIRST_DELTA_MS = "extract(epoch FROM first_delta_at - created_at)::float8 * 1000"
TOTAL_MS = "extract(epoch FROM completed_at - created_at)::float8 * 1000"
PERCENTILES = "ARRAY[0.5, 0.95, 0.99]"

# A row: (bucket, tenant_id or NULL for all, first delta [p50, p95, p99], its count,
# total [p50, p95, p99], its count).
LATENCY_SQL = f"""
SELECT {BUCKET} AS bucket, {{tenant_column}} AS tenant_id,
       percentile_cont({PERCENTILES}) WITHIN GROUP (ORDER BY {FIRST_DELTA_MS}) AS first_p,
       count(first_delta_at) AS first_n,
       percentile_cont({PERCENTILES}) WITHIN GROUP (ORDER BY {TOTAL_MS}) AS total_p,
       count(completed_at) AS total_n
  FROM responses
 WHERE {LATENCY_RANGE}
   AND (first_delta_at IS NOT NULL OR completed_at IS NOT NULL)
 GROUP BY {{grouping}}
"""

ROLLED_RANGE = ("unit = %(unit)s AND start >= %(since)s AND start < %(hours_since)s "
                "{rolled_tenant}")
HOURS_RANGE = ("unit = 'hour' AND start >= %(hours_since)s AND start < %(raw_since)s "
               "{rolled_tenant}")
ROLLED_BUCKET = "(date_trunc(%(unit)s, start AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')"

# A row: (kind, bucket, status, tenant_id, model, error_code, responses, input, output),
# kind one of bucket (by bucket and status), tenant, model, error.
SUMMARY_SQL = f"""
WITH detail AS (
    SELECT start AS bucket, tenant_id, model, status, error_code, responses,
           input_tokens, output_tokens
      FROM dashboard_bucketcounts WHERE {ROLLED_RANGE}
    UNION ALL
    SELECT {ROLLED_BUCKET}, tenant_id, model, status, error_code, responses,
           input_tokens, output_tokens
      FROM dashboard_bucketcounts WHERE {HOURS_RANGE}
    UNION ALL
    SELECT {BUCKET}, tenant_id, model, status, coalesce(error_code, ''), 1,
           coalesce(input_tokens, 0), coalesce(output_tokens, 0)
      FROM responses WHERE {RAW_RANGE}
)
SELECT CASE WHEN GROUPING(bucket) = 0 THEN 'bucket' WHEN GROUPING(tenant_id) = 0 THEN 'tenant'
            WHEN GROUPING(model) = 0 THEN 'model' ELSE 'error' END,
       bucket, status, tenant_id, model, error_code,
       sum(responses)::bigint, sum(input_tokens)::bigint, sum(output_tokens)::bigint
  FROM detail
 GROUP BY GROUPING SETS ((bucket, status), (tenant_id), (model), (error_code))
"""

# A row: (bucket, first delta [p50, p95, p99], its count, total [p50, p95, p99], its count).
PAGE_LATENCY_SQL = f"""
SELECT start, ARRAY[first_delta_p50, first_delta_p95, first_delta_p99], first_delta_n,
       ARRAY[total_p50, total_p95, total_p99], total_n
  FROM dashboard_bucketlatency
 WHERE unit = %(unit)s AND start >= %(since)s AND start < %(latency_since)s
   AND tenant_id = %(latency_tenant)s
UNION ALL
SELECT bucket, first_p, first_n, total_p, total_n FROM ({LATENCY_SQL}) AS raw
""".format(tenant_column="NULL::bigint", grouping="1",
           tenant="{tenant}")  # RAW_RANGE's tenant, formatted by the caller


def _tenant(tenant_id: int | None, column: str = "tenant_id") -> str:
    return "" if tenant_id is None else f"AND {column} = %(tenant_id)s"


def counts_sql(tenant_id: int | None) -> str:
    return COUNTS_SQL.format(tenant=_tenant(tenant_id))


def latency_sql(tenant_id: int | None, per_tenant: bool = False) -> str:
    """Per bucket; `per_tenant`: also per bucket and tenant (the rollup's)."""
    if per_tenant:
        return LATENCY_SQL.format(tenant_column="tenant_id", tenant=_tenant(tenant_id),
                                  grouping="GROUPING SETS ((1), (1, 2))")
    return LATENCY_SQL.format(tenant_column="NULL::bigint", tenant=_tenant(tenant_id),
                              grouping="1")


def summary_sql(tenant_id: int | None) -> str:
    return SUMMARY_SQL.format(tenant=_tenant(tenant_id),
                              rolled_tenant=_tenant(tenant_id))


def page_latency_sql(tenant_id: int | None) -> str:
    return PAGE_LATENCY_SQL.format(tenant=_tenant(tenant_id))


def params(unit: str, since: datetime, until: datetime, tenant_id: int | None, *,
           hours_since: datetime | None = None, raw_since: datetime | None = None,
           latency_since: datetime | None = None) -> dict:
    """The statements' parameters (each range from `since` when not given)."""
    return {"unit": unit, "since": since, "until": until, "tenant_id": tenant_id,
            "latency_tenant": tenant_id or 0, "hours_since": hours_since or since,
            "raw_since": raw_since or since, "latency_since": latency_since or since}


def fetch(sql: str, values: dict) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, values)
        return cursor.fetchall()


def counts(unit: str, since: datetime, until: datetime, tenant_id: int | None) -> list[tuple]:
    """COUNTS_SQL's rows for responses created in [since, until)."""
    return fetch(counts_sql(tenant_id), params(unit, since, until, tenant_id))


def latency(unit: str, since: datetime, until: datetime, tenant_id: int | None,
            per_tenant: bool = False) -> list[tuple]:
    """LATENCY_SQL's rows for responses created in [since, until)."""
    return fetch(latency_sql(tenant_id, per_tenant), params(unit, since, until, tenant_id))
