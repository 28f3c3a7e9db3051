"""The limits in force for a tenant: its overrides over the deployment defaults.

Read on every admission, so a process remembers them for API_KEY_CACHE_SECONDS (a changed
limit takes effect within that time, like a revoked key): no database query per request.
"""
import time
from dataclasses import dataclass, fields

from django.conf import settings

from .models import TenantLimits

CACHE_SIZE = 10_000
_cache: dict[int, tuple[float, "Limits"]] = {}


@dataclass(frozen=True)
class Limits:
    """Limits of one tenant (and of each of its API keys); 0 is unlimited."""

    requests_per_minute: int = 0
    tokens_per_minute: int = 0
    concurrent_runs: int = 0
    key_requests_per_minute: int = 0
    key_tokens_per_minute: int = 0
    key_concurrent_runs: int = 0
    monthly_token_budget: int = 0

    @property
    def unlimited(self) -> bool:
        return not any(getattr(self, f.name) for f in fields(self))


def default_limits() -> Limits:
    return Limits(**{f.name: settings.DEFAULT_LIMITS.get(f.name, 0) for f in fields(Limits)})


def remembered_limits(tenant_id: int) -> Limits | None:
    """The limits of `tenant_id` if read within API_KEY_CACHE_SECONDS, else None."""
    cached = _cache.get(tenant_id)
    if cached is not None and cached[0] > time.monotonic():
        return cached[1]
    return None


def limits_for(tenant_id: int) -> Limits:
    """The limits in force for `tenant_id` (remembered for API_KEY_CACHE_SECONDS)."""
    limits = remembered_limits(tenant_id)
    if limits is not None:
        return limits
    limits = default_limits()
    override = TenantLimits.objects.filter(tenant_id=tenant_id).first()
    if override is not None:
        limits = Limits(**{f.name: _pick(getattr(override, f.name), getattr(limits, f.name))
                           for f in fields(Limits)})
    if len(_cache) >= CACHE_SIZE:
        _cache.clear()
    _cache[tenant_id] = (time.monotonic() + settings.API_KEY_CACHE_SECONDS, limits)
    return limits


def _pick(override, default):
    return default if override is None else override
