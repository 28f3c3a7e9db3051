"""Rows of limits and usage: per-tenant limit overrides, usage per response and per day.

Usage rows outlive the responses they count (a `store: false` response is deleted when
it ends, a stored one may be deleted by its tenant): they are the billing record.
"""
from django.db import models

from responses_app.models import Tenant


class TenantLimits(models.Model):
    """Overrides of the deployment's default limits for one tenant.

    An empty field takes the deployment default (settings); 0 means unlimited.
    """

    tenant = models.OneToOneField(Tenant, on_delete=models.CASCADE, primary_key=True,
                                  related_name="limits")
    requests_per_minute = models.PositiveIntegerField(null=True, blank=True)
    tokens_per_minute = models.PositiveIntegerField(null=True, blank=True)
    concurrent_runs = models.PositiveIntegerField(null=True, blank=True)
    key_requests_per_minute = models.PositiveIntegerField(null=True, blank=True)
    key_tokens_per_minute = models.PositiveIntegerField(null=True, blank=True)
    key_concurrent_runs = models.PositiveIntegerField(null=True, blank=True)
    monthly_token_budget = models.PositiveBigIntegerField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "tenant limits"

    def __str__(self):
        return f"limits of {self.tenant}"


class TokenCounts(models.Model):
    """The token counts that usage rows add up."""

    input_tokens = models.PositiveBigIntegerField(default=0)
    cached_tokens = models.PositiveBigIntegerField(default=0)
    output_tokens = models.PositiveBigIntegerField(default=0)
    reasoning_tokens = models.PositiveBigIntegerField(default=0)

    class Meta:
        abstract = True


class ResponseUsage(TokenCounts):
    """The tokens one response used, written once when its run ends."""

    response_id = models.CharField(max_length=64, unique=True)
    # No index of its own: usage_tenant_recorded leads with it (each response's usage row
    # is written into every index of this table; migration 0002).
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="response_usage",
                               db_index=False)
    api_key_id = models.BigIntegerField(null=True, blank=True)
    model = models.CharField(max_length=200)
    status = models.CharField(max_length=16)
    recorded_at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["tenant", "recorded_at"], name="usage_tenant_recorded")]

    def __str__(self):
        return self.response_id


class DailyUsage(TokenCounts):
    """Usage of one tenant on one UTC day with one model: sums of its ResponseUsage rows."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="daily_usage")
    day = models.DateField()
    model = models.CharField(max_length=200)
    requests = models.PositiveBigIntegerField(default=0)

    class Meta:
        verbose_name_plural = "daily usage"
        constraints = [models.UniqueConstraint(fields=["tenant", "day", "model"],
                                               name="daily_usage_tenant_day_model")]

    def __str__(self):
        return f"{self.tenant} {self.day} {self.model}"
