"""Custom (freeform) tools, which Chat Completions lacks, as function tools and back (pure).

A custom tool `{"type": "custom", "name", "description", "format"}` is offered upstream as a
function of one string argument, `input`; its grammar (a `format` of type `grammar`), if
any, is written into the function's description, since no backend takes it as a
constraint. The model's call of that function becomes a `custom_tool_call` output item with
the raw input (decoded from the arguments as they stream: custom_input), streamed as
`response.custom_tool_call_input.delta` / `.done`. In the history a `custom_tool_call` and
its `custom_tool_call_output` go back upstream as that function call and its tool message.
A custom tool inside a `namespace` is offered as `namespace__name`, its calls carrying the
`namespace` (Codex's code mode: `functions.exec`).
"""
from .custom_input import ARGUMENT, InputDecoder, input_as_arguments
from .mcp_history import NAMESPACE_SEPARATOR

INPUT_DELTA = "response.custom_tool_call_input.delta"
INPUT_DONE = "response.custom_tool_call_input.done"


def custom_tool_as_function(tool: dict) -> dict:
    """The Chat Completions function tool standing for a custom tool."""
    description = tool.get("description") or ""
    fmt = tool.get("format") or {}
    if fmt.get("type") == "grammar":
        grammar = (f"The `{ARGUMENT}` argument must be text matching this "
                   f"{fmt.get('syntax')} grammar:\n{fmt.get('definition')}")
        description = f"{description}\n\n{grammar}" if description else grammar
    argument = {"type": "string", "description": "The raw input of the tool (free-form text)."}
    function = {"name": tool["name"], "parameters": {
        "type": "object", "properties": {ARGUMENT: argument}, "required": [ARGUMENT],
        "additionalProperties": False}}
    if description:
        function["description"] = description
    return {"type": "function", "function": function}


def custom_tool_names(tools: list[dict]) -> frozenset:
    """The upstream function names standing for custom tools, namespaced ones flattened."""
    return frozenset(
        [t["name"] for t in tools if t["type"] == "custom"]
        + [f"{t['name']}{NAMESPACE_SEPARATOR}{inner['name']}" for t in tools
           if t["type"] == "namespace" for inner in t["tools"] if inner.get("type") == "custom"])


def custom_items_as_function_items(items: list[dict]) -> list[dict]:
    """The items with custom tool calls and their outputs as function calls and outputs."""
    if not any(item.get("type") in _AS_FUNCTION for item in items):
        return items
    return [_AS_FUNCTION[item["type"]](item) if item.get("type") in _AS_FUNCTION else item
            for item in items]


def _call_as_function(item: dict) -> dict:
    call = {"type": "function_call", "id": item.get("id"), "call_id": item["call_id"],
            "name": item["name"], "arguments": input_as_arguments(item["input"]),
            "status": "completed"}
    if item.get("namespace"):  # called upstream by its flattened name, `namespace__name`
        call["namespace"] = item["namespace"]
    return call


def _output_as_function(item: dict) -> dict:
    return {"type": "function_call_output", "id": item.get("id"), "call_id": item["call_id"],
            "output": item["output"], "status": "completed"}


_AS_FUNCTION = {"custom_tool_call": _call_as_function,
                "custom_tool_call_output": _output_as_function}


# --- the output item while it streams ----------------------------------------------------------

def custom_call_item(ids, piece: dict, name: str, namespace: str | None = None) -> dict:
    """A `custom_tool_call` item, in progress, for the first chunk piece of its call (a
    namespaced tool's with its `namespace`)."""
    item = {"id": ids("ctc"), "type": "custom_tool_call", "status": "in_progress",
            "call_id": piece.get("id") or ids("call"), "name": name, "input": ""}
    if namespace:
        item["namespace"] = namespace
    return item


def input_delta(call, arguments: str) -> list[dict]:
    """The `custom_tool_call_input.delta` for the input text a piece of arguments adds."""
    if call.decoder is None:
        call.decoder = InputDecoder()
    text = call.decoder.feed(arguments)
    return [_delta(call, text)] if text else []


def close_custom_call(events: list, call, status: str) -> None:
    """Close a `custom_tool_call`: the rest of its input as a delta, then
    `custom_tool_call_input.done` and `output_item.done`."""
    item = call.item
    if call.decoder is None:
        call.decoder = InputDecoder()
    rest = call.decoder.finish()
    if rest:
        events.append(_delta(call, rest))
    item["input"] = call.decoder.emitted
    item["status"] = status
    events.append({"type": INPUT_DONE, "item_id": item["id"], "output_index": call.output_index,
                   "input": item["input"]})
    events.append({"type": "response.output_item.done", "output_index": call.output_index,
                   "item": item})


def _delta(call, text: str) -> dict:
    return {"type": INPUT_DELTA, "item_id": call.item["id"], "output_index": call.output_index,
            "delta": text}
