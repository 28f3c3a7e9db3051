"""The dashboard's aggregate statements over stored responses: counts and tokens grouped by
bucket, tenant, model, status and error code, and latency percentiles by bucket. Only
indexed columns and timestamps are read (no JSON), from a created_at range (the
`responses_created` index, or `responses_tenant_usage` for one tenant).

Both return plain tuples; selectors.py folds them into what the page shows and rollup.py
stores the day-wide ones.
"""
from datetime import datetime

from django.db import connection

# A row: (bucket, tenant_id, model, status, error_code or '', responses, input, output).
COUNTS_SQL = """
SELECT date_trunc(%(unit)s, created_at AT TIME ZONE 'UTC') AS bucket, tenant_id, model,
       status, coalesce(error_code, '') AS error_code, count(*),
       coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0)
  FROM responses
 WHERE created_at >= %(since)s AND created_at < %(until)s {tenant}
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
SELECT date_trunc(%(unit)s, created_at AT TIME ZONE 'UTC') AS bucket, {{tenant_column}},
       percentile_cont({PERCENTILES}) WITHIN GROUP (ORDER BY {FIRST_DELTA_MS}),
       count(first_delta_at),
       percentile_cont({PERCENTILES}) WITHIN GROUP (ORDER BY {TOTAL_MS}),
       count(completed_at)
  FROM responses
 WHERE created_at >= %(since)s AND created_at < %(until)s {{tenant}}
   AND (first_delta_at IS NOT NULL OR completed_at IS NOT NULL)
 GROUP BY {{grouping}}
"""


def _params(unit: str, since: datetime, until: datetime, tenant_id: int | None) -> dict:
    return {"unit": unit, "since": since, "until": until, "tenant_id": tenant_id}


def _tenant(tenant_id: int | None) -> str:
    return "" if tenant_id is None else "AND tenant_id = %(tenant_id)s"


def counts_sql(tenant_id: int | None) -> str:
    return COUNTS_SQL.format(tenant=_tenant(tenant_id))


def latency_sql(tenant_id: int | None, per_tenant: bool = False) -> str:
    """Per bucket; `per_tenant`: also per bucket and tenant (the rollup's)."""
    if per_tenant:
        return LATENCY_SQL.format(tenant_column="tenant_id", tenant=_tenant(tenant_id),
                                  grouping="GROUPING SETS ((1), (1, 2))")
    return LATENCY_SQL.format(tenant_column="NULL::bigint", tenant=_tenant(tenant_id),
                              grouping="1")


def fetch(sql: str, params: dict) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def counts(unit: str, since: datetime, until: datetime, tenant_id: int | None) -> list[tuple]:
    """COUNTS_SQL's rows for responses created in [since, until)."""
    return fetch(counts_sql(tenant_id), _params(unit, since, until, tenant_id))


def latency(unit: str, since: datetime, until: datetime, tenant_id: int | None,
            per_tenant: bool = False) -> list[tuple]:
    """LATENCY_SQL's rows for responses created in [since, until)."""
    return fetch(latency_sql(tenant_id, per_tenant), _params(unit, since, until, tenant_id))
