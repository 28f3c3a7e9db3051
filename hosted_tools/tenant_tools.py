"""The one hosted-tool decision that needs the tenant: a request's `web_search` tool runs only
if a search backend serves that tenant (hosted_tools.backend_table). Parsing (no tenant, no
database) keeps the tool; the front door, once the caller is known, settles it here: kept,
dropped (named in dropped_tools, as hosted_tools.catalog drops) or refused with the same 400,
and a `tool_choice` left with nothing to call refused as parsing would. Cost with the table in
memory: ~250 ns per request that has a web_search tool (in process, 5 rounds of 200,000;
2026-11-27); a stale table costs one database-thread hop per WEB_SEARCH_BACKENDS_CACHE_SECONDS.
"""
from .catalog import NO_SEARCH_BACKEND, WEB_SEARCH_TYPES, dropped_when_unavailable
from .request_spec import check_tool_choice, unsupported


def asks_web_search(request) -> bool:
    return request.web_search_param is not None


def settle_web_search(request, backend_serves_tenant: bool) -> None:
    """Drop or refuse the request's web search tool when no backend serves its tenant."""
    if not asks_web_search(request) or backend_serves_tenant:
        return
    tools = request.params["tools"]
    tool = next(t for t in tools if t["type"] in WEB_SEARCH_TYPES)
    if not dropped_when_unavailable(tool["type"]):
        raise unsupported(tool["type"], NO_SEARCH_BACKEND, request.web_search_param)
    tools.remove(tool)
    request.dropped_tools.append(tool["type"])
    request.web_search_param = None
    check_tool_choice(request.params["tool_choice"], tools)
