"""What the dashboard shows for a window and a tenant (or all): responses per bucket by
status, tokens per bucket, the top tenants and models by tokens, errors by code, latency
percentiles per bucket. Reads the rollups of closed hours and days (rollup.py) and the
responses after them, in two statements (queries.py); no view logic here.
"""
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from responses_app.models import Tenant

from . import queries, rollup
from .windows import Window

STATUSES = ("completed", "failed", "incomplete", "cancelled", "running")
RUNNING = {"queued", "in_progress"}
TOP = 10


@dataclass
class Latency:
    bucket: datetime
    first_delta: tuple  # (p50, p95, p99) in ms, rounded to 0.1; None where no sample
    first_delta_n: int
    total: tuple
    total_n: int


@dataclass
class Dashboard:
    window: Window
    tenant_id: int | None
    requests: list[dict]  # per bucket: bucket, each of STATUSES, total
    tokens: list[dict]  # per bucket: bucket, input, output
    totals: dict  # responses, each of STATUSES, input, output
    top_tenants: list[dict]  # tenant_id, name, responses, input, output, tokens
    top_models: list[dict]  # model, responses, input, output, tokens
    errors: list[dict]  # error_code, responses
    latency: list[Latency]


def _utc(bucket: datetime) -> datetime:
    return bucket.astimezone(timezone.utc)


def _rounded(values) -> tuple:
    return tuple(None if value is None else round(value, 1) for value in values or (None,) * 3)


def _ranges(window: Window) -> tuple[dict, list[tuple[str, list[datetime]]]]:
    """Where each part of the window is read from (queries.params: the window's own
    rollups, hour rollups, the responses), and the buckets those rollups need."""
    hour = timedelta(hours=1)
    if window.unit == "minute":
        return {}, []
    last_hour = rollup.last_closed("hour", window.until)
    if window.unit == "hour":
        hours = [bucket for bucket in window.buckets if bucket <= last_hour]
        raw_since = last_hour + hour if hours else window.since
        return ({"hours_since": raw_since, "raw_since": raw_since,
                 "latency_since": raw_since}, [("hour", hours)])
    last_day = rollup.last_closed("day", window.until)
    days = [bucket for bucket in window.buckets if bucket <= last_day]
    hours_since = last_day + window.step if days else window.since
    hours = []
    while hours_since + len(hours) * hour <= last_hour:
        hours.append(hours_since + len(hours) * hour)
    raw_since = hours[-1] + hour if hours else hours_since
    return ({"hours_since": hours_since, "raw_since": raw_since,
             "latency_since": hours_since}, [("day", days), ("hour", hours)])


def _latency(rows: list[tuple]) -> dict[datetime, Latency]:
    return {_utc(bucket): Latency(_utc(bucket), _rounded(first), first_n, _rounded(total),
                                  total_n)
            for bucket, first, first_n, total, total_n in rows}


def _top(sums: dict, key: str) -> list[dict]:
    rows = [{key: name, "responses": n, "input": tokens_in, "output": tokens_out,
             "tokens": tokens_in + tokens_out}
            for name, (n, tokens_in, tokens_out) in sums.items()]
    return sorted(rows, key=lambda row: (-row["tokens"], -row["responses"], str(row[key])))[:TOP]


def dashboard(window: Window, tenant_id: int | None = None) -> Dashboard:
    """The dashboard of `window`, of every tenant or of `tenant_id`."""
    ranges, rolled = _ranges(window)
    for unit, starts in rolled:
        if starts:
            rollup.roll_up_buckets(unit, starts, window.until)
    values = queries.params(window.unit, window.since, window.until, tenant_id, **ranges)
    by_bucket = {bucket: dict.fromkeys(STATUSES, 0) for bucket in window.buckets}
    tokens = {bucket: [0, 0] for bucket in window.buckets}
    sums = {"tenant": {}, "model": {}, "error": {}}
    for kind, bucket, status, tenant, model, code, n, tokens_in, tokens_out in \
            queries.fetch(queries.summary_sql(tenant_id), values):
        if kind == "bucket":
            bucket = _utc(bucket)
            by_bucket[bucket]["running" if status in RUNNING else status] += n
            tokens[bucket][0] += tokens_in
            tokens[bucket][1] += tokens_out
        else:
            key = {"tenant": tenant, "model": model, "error": code}[kind]
            sums[kind][key] = (n, tokens_in, tokens_out)
    requests = [{"bucket": bucket, **counts, "total": sum(counts.values())}
                for bucket, counts in by_bucket.items()]
    names = dict(Tenant.objects.filter(pk__in=list(sums["tenant"])).values_list("pk", "name"))
    top_tenants = [{**row, "name": names.get(row["tenant_id"], f"#{row['tenant_id']}")}
                   for row in _top(sums["tenant"], "tenant_id")]
    latency = _latency(queries.fetch(queries.page_latency_sql(tenant_id), values))
    empty = (None, None, None)
    return Dashboard(
        window=window, tenant_id=tenant_id, requests=requests,
        tokens=[{"bucket": bucket, "input": pair[0], "output": pair[1]}
                for bucket, pair in tokens.items()],
        totals={"responses": sum(row["total"] for row in requests),
                **{status: sum(row[status] for row in requests) for status in STATUSES},
                "input": sum(pair[0] for pair in tokens.values()),
                "output": sum(pair[1] for pair in tokens.values())},
        top_tenants=top_tenants, top_models=_top(sums["model"], "model"),
        errors=sorted(({"error_code": code, "responses": n}
                       for code, (n, _, _) in sums["error"].items() if code),
                      key=lambda row: (-row["responses"], row["error_code"])),
        latency=[latency.get(bucket) or Latency(bucket, empty, 0, empty, 0)
                 for bucket in window.buckets],
    )
