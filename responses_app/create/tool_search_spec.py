"""The tool search of a create body and the tools it loads: the `tool_search` tool (run by
the client or, by default, by the gateway: hosted_tools.tool_search), `defer_loading` on
function and MCP tools, and the input items that give the model tools mid-conversation
(`tool_search_call`, `tool_search_output`, `additional_tools`) in their stored shapes,
openai-python's.
"""
from .fields import required_string
from ..errors import InvalidRequest
from ..ids import item_id
from ..translation.client_tools import LOADABLE_TOOL_TYPES

TOOL_SEARCH = "tool_search"
EXECUTIONS = ("server", "client")  # a tool search's; server when left out, as at OpenAI
STATUSES = ("in_progress", "completed", "incomplete")


def tool_search_tool(tool: dict, param: str) -> dict:
    """The tool as stored and echoed: a client tool search keeps its description and
    parameters (the function the model is offered), a server one its description."""
    execution = tool.get("execution") or "server"
    if execution not in EXECUTIONS:
        raise InvalidRequest(f"Invalid value for '{param}.execution': {execution!r}; must "
                             f"be one of {list(EXECUTIONS)}.", param=f"{param}.execution",
                             code="invalid_value")
    parameters = tool.get("parameters")
    if execution == "server" and parameters is not None:
        raise InvalidRequest(f"'{param}.parameters' applies to a tool search the client "
                             f"runs; the gateway's search takes a 'query'.",
                             param=f"{param}.parameters", code="invalid_value")
    if parameters is not None and not isinstance(parameters, dict):
        raise InvalidRequest(f"'{param}.parameters' must be a JSON schema object.",
                             param=f"{param}.parameters", code="invalid_type")
    description = tool.get("description")
    if description is not None and not isinstance(description, str):
        raise InvalidRequest(f"'{param}.description' must be a string.",
                             param=f"{param}.description", code="invalid_type")
    return {"type": TOOL_SEARCH, "execution": execution, "description": description,
            "parameters": parameters}


def check_deferred_tools(tools: list[dict]) -> None:
    """Tools marked `defer_loading` need a tool search to be found by."""
    deferred = any(t.get("defer_loading") for t in tools) or any(
        inner.get("defer_loading") for t in tools if t["type"] == "namespace"
        for inner in t["tools"])
    if deferred and not any(t["type"] == TOOL_SEARCH for t in tools):
        raise InvalidRequest("Tools marked 'defer_loading' are offered once a tool search "
                             "finds them: add a {'type': 'tool_search'} tool.", param="tools",
                             code="invalid_value")


def _loadable_tools(value, param, mcp: bool = False) -> list[dict]:
    """Tools the client gives the model mid-conversation: functions, custom and namespaced
    tools and the client-run tools (the gateway runs none of them); with `mcp` (the output
    of the gateway's own search, sent again), the MCP tools it loaded too."""
    if not isinstance(value, list):
        raise InvalidRequest(f"'{param}' must be a list of tools.", param=param,
                             code="invalid_type")
    for index, tool in enumerate(value):
        where = f"{param}[{index}]"
        kind = tool.get("type") if isinstance(tool, dict) else None
        if mcp and kind == "mcp":
            required_string(tool, "server_label", where)
            names = tool.get("allowed_tools")
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise InvalidRequest(f"'{where}.allowed_tools' must be a list of tool names.",
                                     param=f"{where}.allowed_tools", code="invalid_value")
            continue
        if kind not in LOADABLE_TOOL_TYPES:
            raise InvalidRequest(f"Invalid value for '{where}.type': {kind!r}; tools given in "
                                 f"an item are among {list(LOADABLE_TOOL_TYPES)}.",
                                 param=f"{where}.type", code="invalid_value")
        if kind in ("function", "custom", "namespace"):
            required_string(tool, "name", where)
        inner = tool.get("tools") if kind == "namespace" else []
        if not isinstance(inner, list) or not all(
                isinstance(t, dict) and isinstance(t.get("name"), str) for t in inner):
            raise InvalidRequest(f"'{where}.tools' must be a list of function or custom tools.",
                                 param=f"{where}.tools", code="invalid_value")
    return [dict(tool) for tool in value]


def _tool_search_call(item, param) -> dict:
    arguments = item.get("arguments")
    if not isinstance(arguments, dict):
        raise InvalidRequest(f"'{param}.arguments' must be an object.",
                             param=f"{param}.arguments", code="invalid_type")
    execution = _execution(item, param)
    return {"id": item_id(item, "tsc"), "type": "tool_search_call",
            "call_id": _search_call_id(item, param, execution), "execution": execution,
            "arguments": arguments,
            "status": _status(item, param)}


def _tool_search_output(item, param) -> dict:
    execution = _execution(item, param)
    return {"id": item_id(item, "tso"), "type": "tool_search_output",
            "call_id": _search_call_id(item, param, execution), "execution": execution,
            "tools": _loadable_tools(item.get("tools"), f"{param}.tools",
                                     mcp=execution == "server"),
            "status": _status(item, param)}


def _execution(item, param) -> str:
    """A tool search item's `execution`: client when left out (the client sends its own)."""
    execution = item.get("execution") or "client"
    if execution not in EXECUTIONS:
        raise InvalidRequest(f"Invalid value for '{param}.execution': must be one of "
                             f"{list(EXECUTIONS)}.", param=f"{param}.execution",
                             code="invalid_value")
    return execution


def _search_call_id(item, param, execution) -> str | None:
    """The client's search call has its `call_id`; the gateway's has none (OpenAI's hosted
    search shows null)."""
    if execution == "client":
        return required_string(item, "call_id", param)
    call_id = item.get("call_id")
    return call_id if isinstance(call_id, str) and call_id else None


def _additional_tools(item, param) -> dict:
    if item.get("role", "developer") != "developer":
        raise InvalidRequest(f"Invalid value for '{param}.role': only 'developer'.",
                             param=f"{param}.role", code="invalid_value")
    return {"id": item_id(item, "adt"), "type": "additional_tools", "role": "developer",
            "tools": _loadable_tools(item.get("tools"), f"{param}.tools")}


def _status(item, param) -> str:
    status = item.get("status") or "completed"
    if status not in STATUSES:
        raise InvalidRequest(f"Invalid value for '{param}.status': must be one of "
                             f"{list(STATUSES)}.", param=f"{param}.status", code="invalid_value")
    return status



TOOL_SEARCH_ITEM_BUILDERS = {
    "tool_search_call": _tool_search_call,
    "tool_search_output": _tool_search_output,
    "additional_tools": _additional_tools,
}
