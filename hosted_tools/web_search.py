"""Running one `web_search` call: the tool's options (`search_context_size`, filters,
`user_location`) made into a query, sent to the backend that serves the tenant
(hosted_tools.backend_table, read on a database thread when the table in memory is stale;
its wire format in hosted_tools.web_backends) through the egress guard of mcp_tools.egress
(the backend's address resolved once, checked, and connected to; WEB_SEARCH_EGRESS_ALLOWLIST
lets a private instance through), and its answer made into results. Failures are a
`SearchFailed` whose message the model is told.

`search_context_size` sets how much the model is given: low 3 results of up to 400
characters, medium 5 of up to 1,000, high 10 of up to 2,500.
"""
import functools

import httpx2
import orjson
from django.conf import settings

from mcp_tools.egress import (
    EgressRefused, PinnedTransport, parse_allowlist, resolve_checked, system_resolver,
)
from responses_app.worker.loop import blocking

from .backend_table import SearchBackend, backend_table, remembered_backends
from .web_backends import BACKENDS, BackendAnswerInvalid, WebQuery

CONTEXT_SIZES = {"low": (3, 400), "medium": (5, 1000), "high": (10, 2500)}
MAX_ANSWER_BYTES = 2_000_000


@functools.cache
def _tls_context():
    """One TLS context per process, shared by every search's client: httpx builds one per
    client otherwise (loading the CA bundle): a search of the fake SearXNG on loopback took
    119-160 ms p50 with a context per client, 2-13 ms with this one (200 searches per run,
    3 runs before and 3 after, alternated, on a shared noisy machine; 2026-11-27)."""
    return httpx2.create_ssl_context()


class SearchFailed(Exception):
    """A search that did not give results; the message says why (the model is told)."""


def web_query(tool: dict, query: str) -> WebQuery:
    count, chars = CONTEXT_SIZES[tool.get("search_context_size") or "medium"]
    domains = tuple(((tool.get("filters") or {}).get("allowed_domains")) or ())
    return WebQuery(query=query, count=count, text_chars=chars, allowed_domains=domains,
                    location=tool.get("user_location"),
                    context_size=tool.get("search_context_size") or "medium")


async def tenant_backend(tenant_id: int) -> SearchBackend:
    """The backend that serves the tenant now (SearchFailed if none does any more)."""
    table = remembered_backends() or await blocking(backend_table)
    backend = table.for_tenant(tenant_id)
    if backend is None:
        raise SearchFailed("no search backend is configured")
    if backend.problem:
        raise SearchFailed(f"the search backend '{backend.name}' cannot be used: "
                           f"{backend.problem}")
    return backend


async def search_web(tool: dict, query: str, tenant_id: int, resolver=system_resolver) -> list:
    """The results of one web search for the request's `tool` (SearchFailed if none)."""
    backend = await tenant_backend(tenant_id)
    build, parse = BACKENDS[backend.kind]
    wanted = web_query(tool, query)
    request = build(backend.url, backend.api_key, wanted)
    allowlist = parse_allowlist(settings.WEB_SEARCH_EGRESS_ALLOWLIST)
    try:
        pinned = await resolve_checked(request.url, allowlist, resolver)
    except EgressRefused as refused:
        raise SearchFailed(f"the search backend may not be reached: {refused}") from None
    timeout = backend.timeout
    try:
        transport = PinnedTransport(pinned, httpx2.AsyncHTTPTransport(
            verify=_tls_context(), trust_env=False))
        async with httpx2.AsyncClient(transport=transport, timeout=timeout, trust_env=False,
                                      verify=_tls_context()) as client:
            response = await client.request(request.method, request.url,
                                            params=request.params, headers=request.headers,
                                            json=request.json)
    except httpx2.TimeoutException:
        raise SearchFailed(f"the search backend did not answer within {timeout:g}s") from None
    except httpx2.HTTPError as exc:
        raise SearchFailed(f"the search backend could not be reached ({exc})") from None
    if response.status_code != 200:
        raise SearchFailed(f"the search backend answered HTTP {response.status_code}")
    if len(response.content) > MAX_ANSWER_BYTES:
        raise SearchFailed("the search backend's answer is too large")
    try:
        return parse(orjson.loads(response.content), wanted)
    except (orjson.JSONDecodeError, BackendAnswerInvalid) as exc:
        raise SearchFailed(f"the search backend's answer is not valid ({exc})") from None
