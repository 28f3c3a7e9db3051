"""The models this gateway routes: GATEWAY_MODELS if set, else the upstream's own list."""
import time

import httpx
from django.conf import settings

from .errors import APIError

CACHE_SECONDS = 60
_cache: dict = {}


def list_models() -> list[dict]:
    if settings.GATEWAY_MODELS:
        return [_model(name, "gateway") for name in settings.GATEWAY_MODELS]
    cached = _cache.get(settings.UPSTREAM_BASE_URL)
    if cached and cached[0] > time.monotonic():
        return cached[1]
    headers = {"authorization": f"Bearer {settings.UPSTREAM_API_KEY}"} if settings.UPSTREAM_API_KEY else {}
    try:
        reply = httpx.get(f"{settings.UPSTREAM_BASE_URL}/models", headers=headers,
                          timeout=settings.UPSTREAM_CONNECT_TIMEOUT)
        reply.raise_for_status()
        data = reply.json().get("data") or []
    except (httpx.HTTPError, ValueError, AttributeError) as exc:
        raise APIError(f"The upstream model list is unavailable: {exc}", status=502,
                       type="server_error", code="upstream_unreachable") from None
    models = [_model(str(m.get("id")), m.get("owned_by") or "upstream") for m in data
              if isinstance(m, dict) and m.get("id")]
    _cache[settings.UPSTREAM_BASE_URL] = (time.monotonic() + CACHE_SECONDS, models)
    return models


def _model(name: str, owned_by: str) -> dict:
    return {"id": name, "object": "model", "created": 0, "owned_by": owned_by}
