"""Validation of the hosted tools of a `POST /v1/responses` body (no database here).

`hosted_tool()` checks one hosted tool and decides its outcome (hosted_tools.catalog): the
tool as stored and echoed, or None when it is dropped; a tool that can neither run nor be
dropped is the 400. `check_tool_choice()` refuses a `tool_choice` that leaves the model no
tool to call (`required`, or naming a tool that is not there).
"""
from responses_app.create.client_tool_items import CLIENT_TOOL_TYPES
from responses_app.errors import InvalidRequest
from responses_app.translation.hosted_items import FILE_SEARCH as FILE_SEARCH_FUNCTION
from responses_app.translation.hosted_items import WEB_SEARCH as WEB_SEARCH_FUNCTION
from responses_app.translation.hosted_items import function_for_tool_type

from .catalog import (
    FILE_SEARCH_TYPES, HOSTED_TYPES, WEB_SEARCH_TYPES, dropped_when_unavailable,
    unavailable_reason,
)

CONTEXT_SIZES = ("low", "medium", "high")
LOCATION_FIELDS = ("city", "country", "region", "timezone")
MAX_VECTOR_STORES = 16
MAX_FILE_RESULTS = 50


def hosted_tool(tool: dict, param: str) -> dict | None:
    """The hosted tool as stored and echoed, or None when it is dropped (400 if refused)."""
    kind = tool["type"]
    if kind in WEB_SEARCH_TYPES:
        stored = web_search_tool(tool, param)
    elif kind in FILE_SEARCH_TYPES:
        stored = file_search_tool(tool, param)
    else:
        stored = dict(tool)
    reason = unavailable_reason(stored)
    if reason is None:
        return stored
    if dropped_when_unavailable(kind):
        return None
    raise unsupported(kind, reason, param)


def unsupported(kind: str, reason: str, param: str) -> InvalidRequest:
    """The 400 for a hosted tool that can neither run nor be dropped."""
    return InvalidRequest(
        f"Hosted tool '{kind}' is not supported by this gateway: {reason}. An administrator "
        f"can list '{kind}' in HOSTED_TOOLS_DROP_UNAVAILABLE to have it dropped instead.",
        param=f"{param}.type", code="unsupported_tool")


def web_search_tool(tool: dict, param: str) -> dict:
    size = tool.get("search_context_size") or "medium"
    if size not in CONTEXT_SIZES:
        raise InvalidRequest(f"'{param}.search_context_size' must be 'low', 'medium' or "
                             f"'high'.", param=f"{param}.search_context_size",
                             code="invalid_value")
    stored = {"type": tool["type"], "search_context_size": size,
              "user_location": _user_location(tool.get("user_location"),
                                              f"{param}.user_location")}
    if not tool["type"].startswith("web_search_preview"):
        stored["filters"] = _filters(tool.get("filters"), f"{param}.filters")
    if tool.get("external_web_access") is not None:
        stored["external_web_access"] = bool(tool["external_web_access"])
    return stored


def _user_location(value, param) -> dict | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not all(
            isinstance(value.get(k), str | None) for k in LOCATION_FIELDS):
        raise InvalidRequest(f"'{param}' must be an object of string fields "
                             f"({', '.join(LOCATION_FIELDS)}).", param=param, code="invalid_type")
    return {"type": "approximate", **{k: value.get(k) for k in LOCATION_FIELDS}}


def _filters(value, param) -> dict | None:
    if value is None:
        return None
    domains = value.get("allowed_domains") if isinstance(value, dict) else []
    if domains is not None and not (isinstance(domains, list) and all(
            isinstance(d, str) and d.strip() for d in domains)):
        raise InvalidRequest(f"'{param}.allowed_domains' must be a list of domain names.",
                             param=f"{param}.allowed_domains", code="invalid_type")
    if domains is not None:
        domains = [_domain(d) for d in domains]
    return {"allowed_domains": domains}


def _domain(value: str) -> str:
    """`https://Example.org/path` and `example.org` both mean example.org."""
    value = value.strip().lower()
    value = value.split("://", 1)[-1]
    return value.split("/", 1)[0]


def file_search_tool(tool: dict, param: str) -> dict:
    ids = tool.get("vector_store_ids")
    if not (isinstance(ids, list) and ids and all(isinstance(i, str) and i for i in ids)):
        raise InvalidRequest(f"'{param}.vector_store_ids' must be a non-empty list of vector "
                             f"store ids.", param=f"{param}.vector_store_ids",
                             code="invalid_type")
    if len(ids) > MAX_VECTOR_STORES:
        raise InvalidRequest(f"'{param}.vector_store_ids' may name at most "
                             f"{MAX_VECTOR_STORES} vector stores.",
                             param=f"{param}.vector_store_ids", code="invalid_value")
    count = tool.get("max_num_results")
    if count is not None and (not isinstance(count, int) or isinstance(count, bool)
                              or not 1 <= count <= MAX_FILE_RESULTS):
        raise InvalidRequest(f"'{param}.max_num_results' must be an integer from 1 to "
                             f"{MAX_FILE_RESULTS}.", param=f"{param}.max_num_results",
                             code="invalid_value")
    for name in ("filters", "ranking_options"):
        if tool.get(name) is not None and not isinstance(tool[name], dict):
            raise InvalidRequest(f"'{param}.{name}' must be an object.",
                                 param=f"{param}.{name}", code="invalid_type")
    filters = tool.get("filters")
    if filters is not None:
        check_attribute_filter(filters, f"{param}.filters")
    return {"type": "file_search", "vector_store_ids": list(dict.fromkeys(ids)),
            "max_num_results": count, "ranking_options": tool.get("ranking_options"),
            "filters": filters}


COMPARISONS = ("eq", "ne", "gt", "gte", "lt", "lte", "in", "nin")
COMPOUNDS = ("and", "or")
MAX_FILTER_DEPTH = 8


def check_attribute_filter(value, param: str, depth: int = 0) -> None:
    """OpenAI's attribute filter: a comparison `{type: eq|ne|gt|gte|lt|lte|in|nin, key,
    value}` or a compound `{type: and|or, filters: [...]}` (400 naming the part at fault)."""
    if not isinstance(value, dict) or value.get("type") not in COMPARISONS + COMPOUNDS:
        raise InvalidRequest(f"'{param}' must be a comparison filter (type one of "
                             f"{', '.join(COMPARISONS)}) or a compound filter (and, or).",
                             param=f"{param}.type", code="invalid_value")
    if value["type"] in COMPOUNDS:
        inner = value.get("filters")
        if not isinstance(inner, list) or not inner or depth >= MAX_FILTER_DEPTH:
            raise InvalidRequest(f"'{param}.filters' must be a non-empty list of filters "
                                 f"(at most {MAX_FILTER_DEPTH} deep).",
                                 param=f"{param}.filters", code="invalid_value")
        for index, part in enumerate(inner):
            check_attribute_filter(part, f"{param}.filters[{index}]", depth + 1)
        return
    if not isinstance(value.get("key"), str) or not value["key"]:
        raise InvalidRequest(f"'{param}.key' must be an attribute name.",
                             param=f"{param}.key", code="invalid_value")
    compared = value.get("value")
    if value["type"] in ("in", "nin"):
        wanted = "a list of strings or numbers"
        valid = isinstance(compared, list) and all(
            isinstance(v, str | int | float) and not isinstance(v, bool) for v in compared)
    else:
        wanted = "a string, number or boolean"
        valid = isinstance(compared, str | int | float | bool)
    if not valid:
        raise InvalidRequest(f"'{param}.value' must be {wanted}.", param=f"{param}.value",
                             code="invalid_value")


def check_hosted_tool_count(tools: list[dict]) -> None:
    """One web search and one file search tool at most; their function names are theirs."""
    for types, name in ((WEB_SEARCH_TYPES, WEB_SEARCH_FUNCTION),
                        (FILE_SEARCH_TYPES, FILE_SEARCH_FUNCTION)):
        if sum(t["type"] in types for t in tools) > 1:
            raise InvalidRequest(f"At most one '{name}' tool per request.", param="tools",
                                 code="invalid_value")
        if any(t["type"] in types for t in tools) and name in callable_names(tools, False):
            raise InvalidRequest(f"A function tool named '{name}' cannot be used beside the "
                                 f"hosted '{name}' tool.", param="tools", code="invalid_value")


def callable_names(tools: list[dict], hosted: bool = True) -> set[str]:
    """The names the model may call: functions, custom tools, namespaced functions (and,
    with `hosted`, the hosted tools kept)."""
    names = set()
    for tool in tools:
        if tool["type"] in ("function", "custom"):
            names.add(tool["name"])
        elif tool["type"] in (*CLIENT_TOOL_TYPES, "tool_search"):  # a function of that name
            names.add(tool["type"])
        elif tool["type"] == "namespace":
            names |= {inner["name"] for inner in tool["tools"]}
        elif hosted and tool["type"] in WEB_SEARCH_TYPES:
            names.add(WEB_SEARCH_FUNCTION)
        elif hosted and tool["type"] in FILE_SEARCH_TYPES:
            names.add(FILE_SEARCH_FUNCTION)
    return names


def check_tool_choice(choice, tools: list[dict]) -> None:
    """A `tool_choice` that requires a call the model cannot make is a 400."""
    has_mcp = any(t["type"] == "mcp" for t in tools)
    names = callable_names(tools)
    if choice == "required" and not names and not has_mcp:
        raise InvalidRequest("tool_choice 'required' needs at least one tool the model can "
                             "call, and this request has none (hosted tools this gateway does "
                             "not run are dropped).", param="tool_choice",
                             code="invalid_value")
    if not isinstance(choice, dict):
        return
    kind = choice["type"]
    if kind in ("function", "custom") and choice["name"] not in names and not has_mcp:
        # (an MCP tool's function name is known once its server is listed, in the run)
        raise InvalidRequest(f"Tool choice '{kind}' with name '{choice['name']}' not found in "
                             f"'tools' parameter.", param="tool_choice", code="invalid_value")
    if kind in CLIENT_TOOL_TYPES and kind not in names:
        raise InvalidRequest(f"Tool choice '{kind}' names a tool this request does not offer.",
                             param="tool_choice", code="invalid_value")
    if kind in HOSTED_TYPES and hosted_choice_function(kind) not in names:
        raise InvalidRequest(f"Tool choice '{kind}' names a tool this request does not offer "
                             f"(or this gateway dropped).", param="tool_choice",
                             code="invalid_value")
    if kind == "allowed_tools" and choice["mode"] == "required" and not has_mcp:
        allowed = {t.get("name") or hosted_choice_function(t.get("type"))
                   for t in choice["tools"] if isinstance(t, dict)}
        if not allowed & names:
            raise InvalidRequest("tool_choice 'allowed_tools' with mode 'required' allows no "
                                 "tool the model can call.", param="tool_choice",
                                 code="invalid_value")


def hosted_choice_function(kind) -> str | None:
    """The function a hosted tool choice (`{"type": "web_search_preview"}`) forces."""
    return function_for_tool_type(kind) or kind  # an unbacked type: never callable
