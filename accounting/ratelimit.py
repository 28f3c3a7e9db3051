"""Admission of requests against rate limits and quotas, and settling runs when they end.

One service for both fronts (the ASGI front's POST /v1/responses and the DRF views):

- every authenticated /v1 request costs one request per minute, of its API key and of its
  tenant;
- a request that starts a run (POST /v1/responses) is also charged an estimate of its
  tokens (request body bytes / 4) against tokens per minute, and takes a concurrent-run
  slot; when the run ends the worker settles it: the estimate is replaced by the real
  usage (the buckets get the difference) and the slot is released. A slot whose worker
  died lapses after its lease (the run deadline plus a margin);
- the monthly token budget of the tenant is checked when a run is admitted, against the
  tokens used this month (real usage only, added when runs end: runs in flight may
  overshoot it).

Each check is one atomic call of the limiter: a Redis script, or its in-process twin in
the embedded mode. Limits come from `limits.limits_for` (no query per request).
"""
import logging
import math
import secrets
from datetime import datetime, timezone
from functools import lru_cache

from django.conf import settings
from django.db.models import Sum
from redis.exceptions import RedisError

from observability.metrics import RATE_LIMITED
from responses_app import backends
from responses_app.errors import APIError, ServiceUnavailable, is_backing_service_outage

from .limiter_plan import AdmissionPlan, Bucket, RunSet, Settlement
from .limits import Limits, limits_for, remembered_limits

log = logging.getLogger(__name__)

QUOTA_TTL_MS = 40 * 24 * 3600 * 1000


class RateLimited(APIError):
    status = 429
    type = "requests"
    code = "rate_limit_exceeded"


class QuotaExceeded(APIError):
    status = 429
    type = "insufficient_quota"
    code = "insufficient_quota"


class Admission:
    """An admitted request: the headers to send, and what its run must settle when it ends."""

    def __init__(self, tenant_id: int, api_key_id: int, headers: dict, slot: str | None = None,
                 tokens: int = 0, limited: bool = False):
        self.tenant_id = tenant_id
        self.api_key_id = api_key_id
        self.headers = headers
        self.slot = slot
        self.tokens = tokens
        self.limited = limited

    def run_context(self) -> dict:
        """What the run needs to settle this admission (stored with the response)."""
        return {"api_key_id": self.api_key_id, "limited": self.limited, "slot": self.slot,
                "estimated_tokens": self.tokens}


@lru_cache(maxsize=1)
def limiter():
    """The process's limiter: Redis in production, in-process in the embedded mode
    (responses_app/backends.py)."""
    return backends.build("limiter")


def estimate_tokens(body: bytes) -> int:
    """The tokens charged at admission: about four bytes of request per token."""
    return math.ceil(len(body) / 4)


def admits_without_io(principal) -> bool:
    """Whether `admit` would neither read the database nor call the limiter: the
    principal's limits are remembered, and there are none."""
    limits = remembered_limits(principal.tenant.id)
    return limits is not None and limits.unlimited


def admit(principal, *, tokens: int = 0, run: bool = False) -> Admission:
    """Count one request of `principal` (and `tokens`, and a run slot if `run`), or raise
    RateLimited / QuotaExceeded. Unlimited tenants cost nothing."""
    tenant_id, api_key_id = principal.tenant.id, principal.api_key_id
    limits = limits_for(tenant_id)
    if limits.unlimited:
        return Admission(tenant_id, api_key_id, {})
    slot = secrets.token_hex(8) if run and (limits.concurrent_runs or limits.key_concurrent_runs) \
        else None
    tokens = tokens if run else 0
    kinds, plan = _admission_plan(tenant_id, api_key_id, limits, tokens, run, slot, -1)
    verdict = _call(limiter().admit, plan)
    if verdict.verdict == "seed":
        plan = _admission_plan(tenant_id, api_key_id, limits, tokens, run, slot,
                               month_tokens(tenant_id))[1]
        verdict = _call(limiter().admit, plan)
    headers = _headers(kinds, plan.buckets, verdict.states)
    if verdict.verdict == "ok":
        return Admission(tenant_id, api_key_id, headers, slot, tokens, True)
    refusal = _refusal(verdict, kinds, plan, limits, headers)
    RATE_LIMITED.labels(refusal.code).inc()
    raise refusal


def settle(tenant_id: int, context: dict, used_tokens: int) -> None:
    """The run of an admitted request ended having used `used_tokens`: correct the token
    buckets, release its slot, add its usage to the month. Failures are logged only (the
    buckets drain and the slot lapses on their own); with the database away (the limits
    unread), the slot is still released and the buckets drain."""
    if not context.get("limited"):
        return
    delta = used_tokens - context.get("estimated_tokens", 0)
    buckets = []
    try:
        limits = limits_for(tenant_id) if delta else None
    except Exception as exc:
        if not is_backing_service_outage(exc):
            raise
        log.warning("the limits of tenant %s could not be read (%s); its token buckets "
                    "drain on their own", tenant_id, exc)
        limits = None
    if limits is not None:
        buckets = [Bucket(key, limit, delta) for key, limit in (
            (_key("k", context["api_key_id"], "tokens"), limits.key_tokens_per_minute),
            (_key("t", tenant_id, "tokens"), limits.tokens_per_minute)) if limit]
    settlement = Settlement(
        buckets=buckets,
        run_set_keys=[_run_key("k", context["api_key_id"]), _run_key("t", tenant_id)],
        quota_key=_quota_key(tenant_id), used_tokens=used_tokens, slot=context.get("slot"))
    try:
        limiter().settle(settlement)
    except RedisError as exc:
        log.warning("settling the limits of tenant %s failed: %s", tenant_id, exc)


def cancel(admission: Admission) -> None:
    """An admitted request failed before its run started: give back its tokens and slot."""
    settle(admission.tenant_id, admission.run_context(), 0)


def month_tokens(tenant_id: int) -> int:
    """Tokens the tenant used this calendar month (UTC), from the daily rollup."""
    from .models import DailyUsage

    first = datetime.now(timezone.utc).date().replace(day=1)
    totals = DailyUsage.objects.filter(tenant_id=tenant_id, day__gte=first).aggregate(
        input=Sum("input_tokens"), output=Sum("output_tokens"))
    return (totals["input"] or 0) + (totals["output"] or 0)


def _admission_plan(tenant_id, api_key_id, limits: Limits, tokens, run, slot, quota_seed):
    candidates = [
        ("requests", _key("k", api_key_id, "requests"), limits.key_requests_per_minute, 1),
        ("requests", _key("t", tenant_id, "requests"), limits.requests_per_minute, 1),
        ("tokens", _key("k", api_key_id, "tokens"), limits.key_tokens_per_minute, tokens),
        ("tokens", _key("t", tenant_id, "tokens"), limits.tokens_per_minute, tokens),
    ]
    kinds = [kind for kind, _, limit, _ in candidates if limit]
    buckets = [Bucket(key, limit, cost) for _, key, limit, cost in candidates if limit]
    run_sets = [RunSet(key, limit) for key, limit in (
        (_run_key("k", api_key_id), limits.key_concurrent_runs),
        (_run_key("t", tenant_id), limits.concurrent_runs)) if limit]
    lease_ms = int((settings.RUN_DEADLINE_SECONDS + settings.RUN_SLOT_LEASE_MARGIN_SECONDS)
                   * 1000)
    return kinds, AdmissionPlan(
        buckets=buckets, run_sets=run_sets, quota_key=_quota_key(tenant_id),
        # the budget stops new runs only: a tenant over it still reads its responses
        budget=limits.monthly_token_budget if run else 0, quota_seed=quota_seed, slot=slot,
        lease_ms=lease_ms, quota_ttl_ms=QUOTA_TTL_MS)


def _call(function, argument):
    try:
        return function(argument)
    except RedisError as exc:
        log.error("rate limiter unavailable: %s", exc)
        raise ServiceUnavailable("The rate limiter is unavailable; retry shortly.") from None


def _refusal(verdict, kinds, plan, limits: Limits, headers: dict) -> APIError:
    if verdict.verdict == "quota":
        return QuotaExceeded(
            f"You exceeded your monthly token budget ({limits.monthly_token_budget} tokens). "
            "Ask the operator of this gateway to raise it.", headers=headers)
    if verdict.verdict == "runs":
        run_set = plan.run_sets[verdict.failed - len(plan.buckets) - 1]
        scope = "API key" if ":k:" in run_set.key else "organization"
        return RateLimited(
            f"Too many concurrent runs for this {scope}: limit {run_set.limit}. Wait for one "
            "to end and try again.", headers={**headers, "Retry-After": "1",
                                              "retry-after-ms": "1000"})
    bucket = plan.buckets[verdict.failed - 1]
    kind = kinds[verdict.failed - 1]
    scope = "API key" if ":k:" in bucket.key else "organization"
    per_minute = "requests per min (RPM)" if kind == "requests" else "tokens per min (TPM)"
    if verdict.verdict == "too_large":
        return RateLimited(
            f"Request too large for {per_minute} of this {scope}: limit {bucket.limit}, "
            f"requested {bucket.cost}.", type=kind, headers=headers)
    seconds = verdict.wait_ms / 1000
    return RateLimited(
        f"Rate limit reached for {per_minute} of this {scope}: limit {bucket.limit}, "
        f"requested {bucket.cost}. Please try again in {format_duration(verdict.wait_ms)}.",
        type=kind, headers={**headers, "Retry-After": str(max(1, math.ceil(seconds))),
                            "retry-after-ms": str(verdict.wait_ms)})


def _headers(kinds, buckets, states) -> dict:
    """OpenAI's x-ratelimit-* headers, from the tighter of the key and tenant buckets."""
    headers = {}
    for kind in ("requests", "tokens"):
        tightest = min(((remaining, reset_ms, bucket.limit)
                        for k, bucket, (remaining, reset_ms) in zip(kinds, buckets, states)
                        if k == kind), default=None)
        if tightest is not None:
            remaining, reset_ms, limit = tightest
            headers[f"x-ratelimit-limit-{kind}"] = str(limit)
            headers[f"x-ratelimit-remaining-{kind}"] = str(max(0, remaining))
            headers[f"x-ratelimit-reset-{kind}"] = format_duration(reset_ms)
    return headers


def format_duration(ms: int) -> str:
    """A duration as OpenAI writes it: `120ms`, `1.5s`, `6m0s`."""
    if ms < 1000:
        return f"{max(0, ms)}ms"
    minutes, rest = divmod(ms, 60_000)
    seconds = f"{rest / 1000:.3f}".rstrip("0").rstrip(".")
    return f"{minutes}m{seconds}s" if minutes else f"{seconds}s"


def _key(scope: str, ident: int, kind: str) -> str:
    return f"gw:rl:{scope}:{ident}:{kind}"


def _run_key(scope: str, ident: int) -> str:
    return f"gw:runs:{scope}:{ident}"


def _quota_key(tenant_id: int) -> str:
    return f"gw:quota:{tenant_id}:{datetime.now(timezone.utc):%Y%m}"
