"""What the dashboard shows for a window and a tenant (or all): responses per bucket by
status, tokens per bucket, the top tenants and models by tokens, errors by code, latency
percentiles per bucket. Reads the rollups of closed hours or days (rollup.py) and runs the
aggregate statements (queries.py) on the rest; no view logic here.
"""
from dataclasses import dataclass
from datetime import datetime, timezone

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


def _split(window: Window) -> tuple[list[datetime], datetime]:
    """The buckets of the window read from the rollups (its closed hours or days), and
    where the statements on the responses start (the whole hour window)."""
    if window.unit not in rollup.STEPS:
        return [], window.since
    last = rollup.last_closed(window.unit, window.until)
    closed = [bucket for bucket in window.buckets if bucket <= last]
    return closed, last + window.step if closed else window.since


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
    closed, raw_since = _split(window)
    if closed:
        rollup.roll_up_buckets(window.unit, closed, window.until)
    ranges = (window.unit, window.since, raw_since, window.until, tenant_id)
    by_bucket = {bucket: dict.fromkeys(STATUSES, 0) for bucket in window.buckets}
    tokens = {bucket: [0, 0] for bucket in window.buckets}
    sums = {"tenant": {}, "model": {}, "error": {}}
    for kind, bucket, status, tenant, model, code, n, tokens_in, tokens_out in \
            queries.summary(*ranges):
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
    latency = _latency(queries.page_latency(*ranges))
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
