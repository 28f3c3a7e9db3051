"""The models this gateway routes, for GET /v1/models.

An exact upstream route lists its model name; a prefix route lists the models its
upstream reports under that prefix; the default upstream lists GATEWAY_MODELS if set,
else its own list. Each model is listed once, by the route that serves it. An upstream's
list is cached for a minute; one that cannot be reached is left out (a 502 only when
nothing at all can be listed).
"""
import logging
import time

import httpx
from django.conf import settings

from upstreams.routing import Route, route_table

from .errors import APIError

log = logging.getLogger(__name__)

CACHE_SECONDS = 60
_cache: dict = {}  # (base url, headers) -> (expires at, [(id, owned_by)])


def list_models() -> list[dict]:
    table = route_table()
    listed: dict[str, dict] = {}
    failures = []

    def add(name: str, owned_by: str, route: Route) -> None:
        if name not in listed and table.route_for(name) is route:
            listed[name] = _model(name, owned_by)

    for name, route in table.exact.items():
        add(name, route.name, route)
    for prefix, route in table.prefixes:
        for name, owned_by in _upstream_models(route, failures):
            if name.startswith(prefix):
                add(name, owned_by, route)
    if settings.GATEWAY_MODELS:
        for name in settings.GATEWAY_MODELS:
            add(name, "gateway", table.default)
    else:
        for name, owned_by in _upstream_models(table.default, failures):
            add(name, owned_by, table.default)
    if failures and not listed:
        raise APIError(f"The upstream model list is unavailable: {failures[0]}", status=502,
                       type="server_error", code="upstream_unreachable")
    return list(listed.values())


def _upstream_models(route: Route, failures: list) -> list[tuple[str, str]]:
    """The (id, owned_by) pairs of the route's upstream /models; [] (noted) if unavailable."""
    headers = route.request_headers()
    key = (route.base_url, tuple(sorted(headers.items())))
    cached = _cache.get(key)
    if cached and cached[0] > time.monotonic():
        return cached[1]
    try:
        reply = httpx.get(f"{route.base_url}/models", headers=headers,
                          timeout=route.connect_timeout, trust_env=False)  # direct: no proxy
        reply.raise_for_status()
        data = reply.json().get("data") or []
    except (httpx.HTTPError, ValueError, AttributeError) as exc:
        log.warning("upstream %s: model list unavailable: %s", route.name, exc)
        failures.append(exc)
        return []
    models = [(str(m["id"]), str(m.get("owned_by") or "upstream")) for m in data
              if isinstance(m, dict) and m.get("id")]
    _cache[key] = (time.monotonic() + CACHE_SECONDS, models)
    return models


def _model(name: str, owned_by: str) -> dict:
    return {"id": name, "object": "model", "created": 0, "owned_by": owned_by}
