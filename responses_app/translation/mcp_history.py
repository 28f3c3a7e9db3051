"""MCP items in a conversation → the function call items the upstream understands (pure).

The model called MCP tools as functions (`<server_label>__<tool>`), so in the history an
`mcp_call` is that call and its result; a denied `mcp_approval_request` is that call answered
with the denial. Listings, pending requests and approvals themselves are not sent upstream.
"""
import re

import orjson

NAMESPACE_SEPARATOR = "__"
FUNCTION_NAME_LIMIT = 64
_INVALID = re.compile(r"[^A-Za-z0-9_-]")
DENIED = "The user denied this tool call."


def mcp_items_as_function_items(items: list[dict]) -> list[dict]:
    """The items with MCP calls as function calls; the calls of one model turn (consecutive
    calls, MCP or not) stay together, their results after them, as the model made them."""
    if not _has_mcp_items(items):
        return items
    requests = {i["id"]: i for i in items if i.get("type") == "mcp_approval_request"}
    result, calls, outputs = [], [], []
    for item in items:
        kind = item.get("type")
        if kind == "mcp_call":
            _add_pair(calls, outputs, item["id"], item, call_result_text(item))
        elif kind == "mcp_approval_response" and not item.get("approve"):
            request = requests.get(item.get("approval_request_id"))
            if request is not None:
                reason = item.get("reason")
                _add_pair(calls, outputs, request["id"], request,
                          f"{DENIED} {reason}" if reason else DENIED)
        elif kind == "function_call":
            calls.append(item)
        elif kind == "function_call_output":
            outputs.append(item)
        elif kind not in ("mcp_list_tools", "mcp_approval_request", "mcp_approval_response"):
            result += calls + outputs + [item]
            calls, outputs = [], []
    return result + calls + outputs


def _has_mcp_items(items: list[dict]) -> bool:
    """Whether an item's type (as text) begins with `mcp_`: looked for among the distinct
    types (a long history has a few), or item by item if one is not hashable."""
    try:
        kinds = {item.get("type", "") for item in items}
    except TypeError:
        return any(str(item.get("type", "")).startswith("mcp_") for item in items)
    return any(str(kind).startswith("mcp_") for kind in kinds)


def call_result_text(item: dict) -> str:
    """What the model is told of an MCP call: its output, or what went wrong."""
    error = item.get("error")
    if error is None:
        return item.get("output") or ""
    if isinstance(error, dict):
        if error.get("type") == "mcp_tool_execution_error":
            texts = [c.get("text", "") for c in error.get("content") or ()
                     if isinstance(c, dict)]
            return "Tool error: " + "\n".join(texts)
        return f"Error ({error.get('type')}): {error.get('message')}"
    return f"Error: {error if isinstance(error, str) else orjson.dumps(error).decode()}"


def upstream_function_name(server_label: str, tool_name: str) -> str:
    """The function name the model calls: `<server_label>__<tool>`, valid for any backend."""
    name = f"{server_label}{NAMESPACE_SEPARATOR}{_INVALID.sub('_', tool_name)}"
    return name[:FUNCTION_NAME_LIMIT]


def _add_pair(calls: list, outputs: list, call_id: str, item: dict, output: str) -> None:
    name = upstream_function_name(item["server_label"], item["name"])
    calls.append({"type": "function_call", "id": call_id, "call_id": call_id, "name": name,
                  "arguments": item.get("arguments") or "{}", "status": "completed"})
    outputs.append({"type": "function_call_output", "call_id": call_id, "output": output,
                    "status": "completed"})
