"""Rolling up closed buckets: each UTC hour and each UTC day, once it ended ROLLUP_GRACE
ago, gets its counts (BucketCounts) and its latency percentiles (BucketLatency, all
tenants and each one) written once, by the same aggregate statements the page runs on
recent responses (queries.py).

Why: the 30-day view over 1,000,000 responses read every row of the window, 5-12 s for its
two statements on the shared 2-core machine; the 24-hour view's ~33,000 rows cost ~300 ms
(bench/dashboard.py). From the rollups each reads a few small rows per bucket, and only
the last hour or two (or today) raw.

`celery beat` rolls up the closed hours and days every hour (tasks.py); the page rolls up
any closed bucket of its window still missing (the first view after an upgrade, or after
beat was down, pays for those once).
"""
from datetime import datetime, timedelta

from django.db import transaction

from . import queries
from .models import BucketCounts, BucketLatency, RolledUpBucket
from .windows import truncated

ROLLUP_GRACE = timedelta(hours=1)  # runs still going then count with their status then
STEPS = {"hour": timedelta(hours=1), "day": timedelta(days=1)}
ALL_TENANTS = 0


def last_closed(unit: str, now: datetime) -> datetime:
    """The start of the newest `unit` bucket that ended at least ROLLUP_GRACE before `now`."""
    return truncated(now - ROLLUP_GRACE, unit) - STEPS[unit]


def roll_up(unit: str, start: datetime) -> bool:
    """Write the rollup of the bucket, unless it is written (or being written by another
    process, which this one waits for); whether this call wrote it."""
    until = start + STEPS[unit]
    with transaction.atomic():
        _, created = RolledUpBucket.objects.get_or_create(unit=unit, start=start)
        if not created:
            return False
        BucketCounts.objects.bulk_create([
            BucketCounts(unit=unit, start=start, tenant_id=tenant_id, model=model,
                         status=status, error_code=error_code, responses=responses,
                         input_tokens=tokens_in, output_tokens=tokens_out)
            for _, tenant_id, model, status, error_code, responses, tokens_in, tokens_out
            in queries.counts(unit, start, until, None)])
        BucketLatency.objects.bulk_create([
            BucketLatency(unit=unit, start=start,
                          tenant_id=ALL_TENANTS if tenant_id is None else tenant_id,
                          first_delta_p50=first[0], first_delta_p95=first[1],
                          first_delta_p99=first[2], first_delta_n=first_n,
                          total_p50=total[0], total_p95=total[1], total_p99=total[2],
                          total_n=total_n)
            for _, tenant_id, first, first_n, total, total_n
            in _without_nulls(queries.latency(unit, start, until, None, per_tenant=True))])
    return True


def _without_nulls(rows: list[tuple]) -> list[tuple]:
    """Percentile arrays of a group without values are NULL: three Nones instead."""
    return [(bucket, tenant_id, first or (None, None, None), first_n,
             total or (None, None, None), total_n)
            for bucket, tenant_id, first, first_n, total, total_n in rows]


def roll_up_buckets(unit: str, starts: list[datetime], now: datetime) -> int:
    """Roll up those of `starts` that are closed and missing; how many were written."""
    closed = [start for start in starts if start <= last_closed(unit, now)]
    done = set(RolledUpBucket.objects.filter(unit=unit, start__in=closed)
               .values_list("start", flat=True))
    return sum(roll_up(unit, start) for start in closed if start not in done)
