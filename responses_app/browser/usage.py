"""A tenant's usage over the last days: responses and tokens per day, failures, top models.

Aggregates over the tenant's responses, read from the (tenant, created_at, status, model,
tokens) index: no per-day rows to maintain.
"""
from dataclasses import dataclass
from datetime import timedelta

from django.db.models import Count, Q, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from ..models import ResponseStatus, StoredResponse, Tenant

TOP_MODELS = 10
RECENT_FAILURES = 10
TOTALS = {
    "responses": Count("status"),
    "failed": Count("status", filter=Q(status=ResponseStatus.FAILED)),
    "input_tokens": Sum("input_tokens"),
    "output_tokens": Sum("output_tokens"),
}


@dataclass
class TenantUsage:
    days: int
    since: object
    totals: dict
    per_day: list[dict]
    top_models: list[dict]
    error_codes: list[dict]
    recent_failures: list[StoredResponse]


def tenant_usage(tenant: Tenant, days: int) -> TenantUsage:
    """Usage of `tenant` from the start of the day `days - 1` days ago (UTC) until now."""
    today = timezone.now().replace(hour=0, minute=0, second=0, microsecond=0)
    since = today - timedelta(days=days - 1)
    rows = StoredResponse.objects.filter(tenant=tenant, created_at__gte=since)
    per_day = list(rows.annotate(day=TruncDate("created_at")).values("day")
                   .annotate(**TOTALS).order_by("-day"))
    top_models = list(rows.values("model").annotate(**TOTALS)
                      .order_by("-responses", "model")[:TOP_MODELS])
    failed = rows.filter(status=ResponseStatus.FAILED)
    error_codes = list(failed.values("error_code").annotate(responses=Count("status"))
                       .order_by("-responses", "error_code"))
    recent_failures = list(failed.only("id", "model", "created_at", "error_code")
                           .order_by("-created_at")[:RECENT_FAILURES])
    totals = {name: sum(day[name] or 0 for day in per_day) for name in TOTALS}
    return TenantUsage(days=days, since=since, totals=totals, per_day=per_day,
                       top_models=top_models, error_codes=error_codes,
                       recent_failures=recent_failures)
