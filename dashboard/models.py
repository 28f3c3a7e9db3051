"""Rollups of closed UTC days of stored responses, so the 30-day view reads ~30 days of
small rows instead of every response (rollup.py writes them, once per day).

A day is rolled up once it ended ROLLUP_GRACE ago; the rows keep its counts as they were
then (a response deleted later still counts, like the usage record).
"""
from django.db import models


class RolledUpDay(models.Model):
    """A day whose rows below are written (a day without traffic has only this one)."""

    day = models.DateField(primary_key=True)
    rolled_up_at = models.DateTimeField(auto_now_add=True)


class DayCounts(models.Model):
    """Responses of one day, tenant, model, status and error code, and their tokens."""

    day = models.DateField()
    tenant_id = models.BigIntegerField()
    model = models.CharField(max_length=200)
    status = models.CharField(max_length=16)
    error_code = models.CharField(max_length=64, blank=True, default="")
    responses = models.PositiveBigIntegerField()
    input_tokens = models.PositiveBigIntegerField()
    output_tokens = models.PositiveBigIntegerField()

    class Meta:
        verbose_name_plural = "day counts"
        indexes = [models.Index(fields=["day", "tenant_id"], name="dashboard_counts_day")]


class DayLatency(models.Model):
    """Latency percentiles (ms) of one day, of every tenant (tenant_id 0) or of one.

    first delta: created to first delta published, of responses that published one;
    total: created to completed, of completed responses."""

    day = models.DateField()
    tenant_id = models.BigIntegerField()  # 0: all tenants
    first_delta_p50 = models.FloatField(null=True)
    first_delta_p95 = models.FloatField(null=True)
    first_delta_p99 = models.FloatField(null=True)
    first_delta_n = models.PositiveBigIntegerField()
    total_p50 = models.FloatField(null=True)
    total_p95 = models.FloatField(null=True)
    total_p99 = models.FloatField(null=True)
    total_n = models.PositiveBigIntegerField()

    class Meta:
        verbose_name_plural = "day latencies"
        constraints = [models.UniqueConstraint(fields=["day", "tenant_id"],
                                               name="dashboard_latency_day_tenant")]
