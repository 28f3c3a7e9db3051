"""Rollups of closed UTC hours and days of stored responses, so the 24-hour and 30-day
views read a few small rows per bucket instead of every response (rollup.py writes them,
once per bucket).

A bucket is rolled up once it ended ROLLUP_GRACE ago; its rows keep its counts as they
were then (a response deleted later still counts, as in the usage records).
"""
from django.db import models

UNITS = [("hour", "hour"), ("day", "day")]


class RolledUpBucket(models.Model):
    """A bucket whose rows below are written (one without traffic has only this one)."""

    unit = models.CharField(max_length=8, choices=UNITS)
    start = models.DateTimeField()
    rolled_up_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["unit", "start"],
                                               name="dashboard_rolled_up_bucket")]


class BucketCounts(models.Model):
    """Responses of one bucket, tenant, model, status and error code, and their tokens."""

    unit = models.CharField(max_length=8, choices=UNITS)
    start = models.DateTimeField()
    tenant_id = models.BigIntegerField()
    model = models.CharField(max_length=200)
    status = models.CharField(max_length=16)
    error_code = models.CharField(max_length=64, blank=True, default="")
    responses = models.PositiveBigIntegerField()
    input_tokens = models.PositiveBigIntegerField()
    output_tokens = models.PositiveBigIntegerField()

    class Meta:
        verbose_name_plural = "bucket counts"
        indexes = [models.Index(fields=["unit", "start", "tenant_id"],
                                name="dashboard_counts_bucket")]


class BucketLatency(models.Model):
    """Latency percentiles (ms) of one bucket, of every tenant (tenant_id 0) or of one.

    first delta: created to first delta published, of responses that published one;
    total: created to completed, of completed responses."""

    unit = models.CharField(max_length=8, choices=UNITS)
    start = models.DateTimeField()
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
        verbose_name_plural = "bucket latencies"
        constraints = [models.UniqueConstraint(fields=["unit", "start", "tenant_id"],
                                               name="dashboard_latency_bucket_tenant")]
