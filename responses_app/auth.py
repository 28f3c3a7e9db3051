"""API keys: minting, hashing, and resolving `Authorization: Bearer sk-…` to a tenant.

Keys are random, so a keyed SHA-256 is enough (a slow password hash buys nothing); the
prefix is indexed for lookup and the hash compared in constant time.
"""
import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.utils import timezone
from rest_framework.authentication import BaseAuthentication

from .errors import AuthenticationError
from .models import ApiKey, Tenant

LAST_USED_RESOLUTION = timedelta(minutes=1)
ACCEPTED_CACHE_SIZE = 10_000
_accepted: dict[str, tuple[float, "TenantPrincipal"]] = {}


@dataclass(frozen=True)
class TenantPrincipal:
    """The authenticated caller: DRF's `request.user` for /v1 endpoints."""

    tenant: Tenant
    api_key_id: int
    is_authenticated: bool = True


def hash_secret(secret: str) -> str:
    return hmac.new(settings.SECRET_KEY.encode(), secret.encode(), hashlib.sha256).hexdigest()


def mint_api_key(tenant: Tenant, name: str = "") -> str:
    """Create a key for `tenant` and return it in full; only its hash is stored."""
    prefix = secrets.token_hex(6)
    secret = secrets.token_urlsafe(32)
    ApiKey.objects.create(tenant=tenant, name=name, prefix=prefix, secret_hash=hash_secret(secret))
    return f"sk-{prefix}_{secret}"


def remembered_principal(authorization: str | None) -> TenantPrincipal | None:
    """The tenant behind a key accepted within API_KEY_CACHE_SECONDS, or None (then
    `resolve_api_key` reads the database)."""
    cached = _accepted.get(authorization)
    if cached is not None and cached[0] > time.monotonic():
        return cached[1]
    return None


def resolve_api_key(authorization: str | None) -> TenantPrincipal:
    """The tenant behind an Authorization header, or AuthenticationError.

    Accepted keys are remembered for API_KEY_CACHE_SECONDS, so a revoked key stops working
    within that time on every process; rejected keys are never remembered.
    """
    principal = remembered_principal(authorization)
    if principal is not None:
        return principal
    principal = _lookup(authorization)
    if len(_accepted) >= ACCEPTED_CACHE_SIZE:
        _accepted.clear()
    _accepted[authorization] = (time.monotonic() + settings.API_KEY_CACHE_SECONDS, principal)
    return principal


def _lookup(authorization: str | None) -> TenantPrincipal:
    if not authorization:
        raise AuthenticationError(
            "You didn't provide an API key. Send it as 'Authorization: Bearer sk-...'."
        )
    scheme, _, token = authorization.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token.startswith("sk-") or "_" not in token:
        raise AuthenticationError("Incorrect API key provided.")
    prefix, _, secret = token[3:].partition("_")
    key = (
        ApiKey.objects.select_related("tenant")
        .filter(prefix=prefix, revoked_at__isnull=True)
        .first()
    )
    if key is None or not hmac.compare_digest(key.secret_hash, hash_secret(secret)):
        raise AuthenticationError("Incorrect API key provided.")
    now = timezone.now()
    if key.last_used_at is None or now - key.last_used_at > LAST_USED_RESOLUTION:
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
    return TenantPrincipal(tenant=key.tenant, api_key_id=key.pk)


class ApiKeyAuthentication(BaseAuthentication):
    """DRF authentication by API key; every /v1 endpoint uses it."""

    def authenticate(self, request):
        principal = resolve_api_key(request.META.get("HTTP_AUTHORIZATION"))
        return principal, None

    def authenticate_header(self, request):
        return "Bearer"
