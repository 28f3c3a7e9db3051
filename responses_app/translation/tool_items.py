"""The tool call output items while their arguments stream: `ToolCall` (an item, its output
index and the argument pieces so far), `McpToolTarget` (what an upstream function name means
when the gateway runs it as an MCP tool), and the builders of the `function_call` and
`mcp_approval_request` items and of the `function_call` events, and the events of the calls
the client runs (function and custom tool calls: `client_call_delta`, `close_client_call`).
Pure: events are appended to the list given, without sequence numbers. The `mcp_call` events
are built in `mcp_events`, the custom tool calls' in `custom_tools`; when a call opens or
closes is the state machine's business."""
from dataclasses import dataclass, field

from .custom_tools import close_custom_call, input_delta

CLIENT_CALLS = ("function_call", "custom_tool_call")


@dataclass(frozen=True)
class McpToolTarget:
    """What an upstream function name means when it is a gateway-run MCP tool."""

    server_label: str
    name: str
    needs_approval: bool


@dataclass
class ToolCall:
    """A tool call item whose arguments stream in pieces."""

    item: dict
    output_index: int | None  # None: an approval request, added when the turn ends
    pieces: list = field(default_factory=list)
    decoder: object = None  # a custom tool call's InputDecoder


def approval_request_item(item_id: str, target: McpToolTarget) -> dict:
    """An `mcp_approval_request` item: added whole when the turn ends, as it streams nothing."""
    return {"id": item_id, "type": "mcp_approval_request",
            "server_label": target.server_label, "name": target.name, "arguments": ""}


def function_call_item(ids, piece: dict, upstream_name: str, function_names: dict) -> dict:
    """A `function_call` item, in progress, for the first chunk piece of an upstream call.

    A flattened namespace tool gets its own name and namespace back from `function_names`."""
    name, namespace = function_names.get(upstream_name, (upstream_name, None))
    item = {"id": ids("fc"), "type": "function_call",
            "status": "in_progress", "arguments": "",
            "call_id": piece.get("id") or ids("call"), "name": name}
    if namespace:
        item["namespace"] = namespace
    return item


def function_arguments_delta(call: ToolCall, delta: str) -> dict:
    return {"type": "response.function_call_arguments.delta", "item_id": call.item["id"],
            "output_index": call.output_index, "delta": delta}


def close_function_call(events: list, call: ToolCall, status: str) -> None:
    """Close a `function_call` with its arguments: `function_call_arguments.done` and
    `output_item.done`."""
    item = call.item
    item["arguments"] = "".join(call.pieces)
    item["status"] = status
    events.append({"type": "response.function_call_arguments.done", "item_id": item["id"],
                   "output_index": call.output_index, "arguments": item["arguments"],
                   "name": item["name"]})
    events.append({"type": "response.output_item.done", "output_index": call.output_index,
                   "item": item})


def client_call_delta(call: ToolCall, arguments: str) -> list[dict]:
    """The events for a piece of a client-run call's arguments."""
    if call.item["type"] == "custom_tool_call":
        return input_delta(call, arguments)
    return [function_arguments_delta(call, arguments)]


def close_client_call(events: list, call: ToolCall, status: str) -> None:
    """Close a function or custom tool call with what it streamed."""
    if call.item["type"] == "custom_tool_call":
        close_custom_call(events, call, status)
    else:
        close_function_call(events, call, status)
