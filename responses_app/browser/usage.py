"""A tenant's usage over the last days: responses and tokens per day, failures, top models.

One aggregate over the tenant's responses grouped by day and model, read from the
(tenant, created_at, status, model, tokens) index, then summed per day and per model here:
no per-day rows to maintain, and one pass over the index.
"""
from collections import defaultdict
from dataclasses import dataclass
from datetime import timedelta

from django.db.models import Count, Q, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from ..models import ResponseStatus, StoredResponse, Tenant

TOP_MODELS = 10
RECENT_FAILURES = 10
COUNTS = ("responses", "failed", "input_tokens", "output_tokens")


@dataclass
class TenantUsage:
    days: int
    since: object
    totals: dict
    per_day: list[dict]
    top_models: list[dict]
    error_codes: list[dict]
    recent_failures: list[StoredResponse]


def _summed(groups: list[dict], key: str) -> list[dict]:
    """The (day, model) groups added up per `key`, as {key, responses, failed, …} rows."""
    sums: dict = defaultdict(lambda: dict.fromkeys(COUNTS, 0))
    for group in groups:
        for name in COUNTS:
            sums[group[key]][name] += group[name] or 0
    return [{key: value, **counts} for value, counts in sums.items()]


def tenant_usage(tenant: Tenant, days: int) -> TenantUsage:
    """Usage of `tenant` from the start of the day `days - 1` days ago (UTC) until now."""
    today = timezone.now().replace(hour=0, minute=0, second=0, microsecond=0)
    since = today - timedelta(days=days - 1)
    rows = StoredResponse.objects.filter(tenant=tenant, created_at__gte=since)
    groups = list(rows.annotate(day=TruncDate("created_at")).values("day", "model").annotate(
        responses=Count("status"),
        failed=Count("status", filter=Q(status=ResponseStatus.FAILED)),
        input_tokens=Sum("input_tokens"), output_tokens=Sum("output_tokens"),
    ).order_by())
    per_day = sorted(_summed(groups, "day"), key=lambda day: day["day"], reverse=True)
    top_models = sorted(_summed(groups, "model"),
                        key=lambda model: (-model["responses"], model["model"]))[:TOP_MODELS]
    failed = rows.filter(status=ResponseStatus.FAILED)
    error_codes = list(failed.values("error_code").annotate(responses=Count("status"))
                       .order_by("-responses", "error_code"))
    recent_failures = list(failed.only("id", "model", "created_at", "error_code")
                           .order_by("-created_at")[:RECENT_FAILURES])
    totals = {name: sum(day[name] for day in per_day) for name in COUNTS}
    return TenantUsage(days=days, since=since, totals=totals, per_day=per_day,
                       top_models=top_models, error_codes=error_codes,
                       recent_failures=recent_failures)
