"""Rolling up closed days: each UTC day, once it ended ROLLUP_GRACE ago, gets its counts
(DayCounts) and its latency percentiles (DayLatency, all tenants and each one) written
once, from the same aggregate statements the page runs on recent responses (queries.py).

Why: the 30-day view over a million responses read every row of the window (1.4-1.6 s
per statement at 1,000,000 rows on the shared 2-core machine, bench/dashboard.py); from
the rollups it reads ~30 days of small rows, and only today's responses raw.

`celery beat` rolls up yesterday every hour (tasks.py); the page rolls up any closed day of
its window still missing (the first view after an upgrade pays for those once).
"""
from datetime import date, datetime, time, timedelta, timezone

from django.db import transaction

from . import queries
from .models import DayCounts, DayLatency, RolledUpDay

ROLLUP_GRACE = timedelta(hours=1)  # runs still going then count with their status then
ALL_TENANTS = 0


def day_start(day: date) -> datetime:
    return datetime.combine(day, time.min, timezone.utc)


def last_closed_day(now: datetime) -> date:
    """The newest day that ended at least ROLLUP_GRACE before `now`."""
    return (now - ROLLUP_GRACE).astimezone(timezone.utc).date() - timedelta(days=1)


def roll_up_day(day: date) -> bool:
    """Write the rollup of `day`, unless it is written (or being written by another
    process, which this one waits for); whether this call wrote it."""
    since, until = day_start(day), day_start(day + timedelta(days=1))
    with transaction.atomic():
        _, created = RolledUpDay.objects.get_or_create(day=day)
        if not created:
            return False
        DayCounts.objects.bulk_create([
            DayCounts(day=day, tenant_id=tenant_id, model=model, status=status,
                      error_code=error_code, responses=responses, input_tokens=tokens_in,
                      output_tokens=tokens_out)
            for _, tenant_id, model, status, error_code, responses, tokens_in, tokens_out
            in queries.counts("day", since, until, None)])
        DayLatency.objects.bulk_create([
            DayLatency(day=day, tenant_id=ALL_TENANTS if tenant_id is None else tenant_id,
                       first_delta_p50=first[0], first_delta_p95=first[1],
                       first_delta_p99=first[2], first_delta_n=first_n,
                       total_p50=total[0], total_p95=total[1], total_p99=total[2],
                       total_n=total_n)
            for _, tenant_id, first, first_n, total, total_n
            in _without_nulls(queries.latency("day", since, until, None, per_tenant=True))])
    return True


def _without_nulls(rows: list[tuple]) -> list[tuple]:
    """Percentile arrays of a group without values are NULL: three Nones instead."""
    return [(bucket, tenant_id, first or (None, None, None), first_n,
             total or (None, None, None), total_n)
            for bucket, tenant_id, first, first_n, total, total_n in rows]


def roll_up_days(days: list[date], now: datetime) -> int:
    """Roll up those of `days` that are closed and missing; how many were written."""
    closed = [day for day in days if day <= last_closed_day(now)]
    done = set(RolledUpDay.objects.filter(day__in=closed).values_list("day", flat=True))
    return sum(roll_up_day(day) for day in closed if day not in done)
