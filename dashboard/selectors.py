"""What the dashboard shows for a window and a tenant (or all): responses per bucket by
status, tokens per bucket, the top tenants and models by tokens, errors by code, latency
percentiles per bucket. Reads the rollups of closed days (rollup.py) and runs the
aggregate statements (queries.py) on the rest; no view logic here.
"""
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from responses_app.models import Tenant

from . import queries, rollup
from .models import DayCounts, DayLatency
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


def _utc(bucket) -> datetime:
    """A bucket as returned (naive UTC timestamp, or a rollup's date) as aware UTC."""
    if not isinstance(bucket, datetime):
        return rollup.day_start(bucket)
    return bucket.replace(tzinfo=timezone.utc)


def _rounded(values) -> tuple:
    return tuple(None if value is None else round(value, 1) for value in values or (None,) * 3)


def _split(window: Window) -> tuple[list, datetime]:
    """The closed days of a 30-day window read from the rollups, and where the raw
    statements start (the whole window for the shorter ones)."""
    if window.unit != "day":
        return [], window.since
    last = rollup.last_closed_day(window.until)
    days = [bucket.date() for bucket in window.buckets if bucket.date() <= last]
    return days, rollup.day_start(last + timedelta(days=1)) if days else window.since


def _count_rows(window: Window, tenant_id: int | None, days: list, raw_since) -> list[tuple]:
    rows = []
    if days:
        stored = DayCounts.objects.filter(day__in=days)
        if tenant_id is not None:
            stored = stored.filter(tenant_id=tenant_id)
        rows += stored.values_list("day", "tenant_id", "model", "status", "error_code",
                                   "responses", "input_tokens", "output_tokens")
    return rows + queries.counts(window.unit, raw_since, window.until, tenant_id)


def _latency_rows(window: Window, tenant_id: int | None, days: list, raw_since) -> list[Latency]:
    rows = []
    if days:
        stored = DayLatency.objects.filter(day__in=days,
                                           tenant_id=tenant_id or rollup.ALL_TENANTS)
        rows += [Latency(_utc(row.day),
                         _rounded((row.first_delta_p50, row.first_delta_p95,
                                   row.first_delta_p99)), row.first_delta_n,
                         _rounded((row.total_p50, row.total_p95, row.total_p99)), row.total_n)
                 for row in stored]
    rows += [Latency(_utc(bucket), _rounded(first), first_n, _rounded(total), total_n)
             for bucket, _, first, first_n, total, total_n
             in queries.latency(window.unit, raw_since, window.until, tenant_id)]
    return rows


def _top(sums: dict, key: str) -> list[dict]:
    rows = [{key: name, "responses": n, "input": tokens_in, "output": tokens_out,
             "tokens": tokens_in + tokens_out}
            for name, (n, tokens_in, tokens_out) in sums.items()]
    return sorted(rows, key=lambda row: (-row["tokens"], -row["responses"], str(row[key])))[:TOP]


def dashboard(window: Window, tenant_id: int | None = None) -> Dashboard:
    """The dashboard of `window`, of every tenant or of `tenant_id`."""
    days, raw_since = _split(window)
    rollup.roll_up_days(days, window.until)
    by_bucket = {bucket: dict.fromkeys(STATUSES, 0) for bucket in window.buckets}
    tokens = {bucket: [0, 0] for bucket in window.buckets}
    tenants, models = defaultdict(lambda: [0, 0, 0]), defaultdict(lambda: [0, 0, 0])
    errors = defaultdict(int)
    for bucket, tenant, model, status, code, n, tokens_in, tokens_out in _count_rows(
            window, tenant_id, days, raw_since):
        bucket = _utc(bucket)
        by_bucket[bucket]["running" if status in RUNNING else status] += n
        tokens[bucket][0] += tokens_in
        tokens[bucket][1] += tokens_out
        for sums, name in ((tenants, tenant), (models, model)):
            sums[name][0] += n
            sums[name][1] += tokens_in
            sums[name][2] += tokens_out
        if code:
            errors[code] += n
    requests = [{"bucket": bucket, **counts, "total": sum(counts.values())}
                for bucket, counts in by_bucket.items()]
    names = dict(Tenant.objects.filter(pk__in=list(tenants)).values_list("pk", "name"))
    top_tenants = [{**row, "name": names.get(row["tenant_id"], f"#{row['tenant_id']}")}
                   for row in _top(tenants, "tenant_id")]
    latency = {row.bucket: row for row in _latency_rows(window, tenant_id, days, raw_since)}
    empty = (None, None, None)
    return Dashboard(
        window=window, tenant_id=tenant_id, requests=requests,
        tokens=[{"bucket": bucket, "input": pair[0], "output": pair[1]}
                for bucket, pair in tokens.items()],
        totals={"responses": sum(row["total"] for row in requests),
                **{status: sum(row[status] for row in requests) for status in STATUSES},
                "input": sum(pair[0] for pair in tokens.values()),
                "output": sum(pair[1] for pair in tokens.values())},
        top_tenants=top_tenants, top_models=_top(models, "model"),
        errors=sorted(({"error_code": code, "responses": n} for code, n in errors.items()),
                      key=lambda row: (-row["responses"], row["error_code"])),
        latency=[latency.get(bucket) or Latency(bucket, empty, 0, empty, 0)
                 for bucket in window.buckets],
    )
