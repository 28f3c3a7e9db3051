"""The tool search the gateway runs (`{"type": "tool_search"}`, execution `server`, the
default): its output item, its events, and which deferred tools a conversation has loaded
(pure).

The model is offered a function `tool_search` (`{"query"}`, as for a client-run search:
client_tools). Its call becomes a `tool_search_call` item (`execution: "server"`,
`call_id: null` as OpenAI's hosted search shows it, `arguments` the decoded object), added
when the call starts and done when the turn ends (client_tool_calls). The gateway then runs
the search (hosted_tools.tool_search) and adds a `tool_search_output` item (`execution:
"server"`, `call_id: null`, `tools` the tools found), `output_item.added` (in_progress, no
tools) then `output_item.done` (completed, with them): OpenAI's schema has no other events
for these items. The found tools are written as the request gave them: a function, a
namespace holding the functions found in it, an MCP server (the request's `mcp` tool with
`allowed_tools` the tools found).

What is loaded is derived from the conversation, nothing is stored beside it: a deferred
tool is offered upstream from the turn after a `tool_search_output` holding it, for the
rest of the run and in any response continuing it (`previous_response_id`, a conversation,
or the items sent again), as the client-run search's outputs are (client_tools).
"""

SERVER_TOOL_SEARCH = "tool_search:server"  # the client_tools kind of the gateway's search


def output_item(ids, tools: list[dict]) -> dict:
    """A server `tool_search_output` item, complete."""
    return {"id": ids("tso"), "type": "tool_search_output", "call_id": None,
            "execution": "server", "tools": tools, "status": "completed"}


def output_events(item: dict, output_index: int) -> list[dict]:
    """`output_item.added` (in progress, no tools yet) and `output_item.done`."""
    return [{"type": "response.output_item.added", "output_index": output_index,
             "item": {**item, "tools": [], "status": "in_progress"}},
            {"type": "response.output_item.done", "output_index": output_index, "item": item}]


def loaded_tools(items: list[dict]) -> list[dict]:
    """The tools every `tool_search_output` among `items` holds, in order."""
    return [tool for item in items if item.get("type") == "tool_search_output"
            for tool in item.get("tools") or ()]


def loaded_mcp_tools(items: list[dict]) -> set[tuple[str, str]]:
    """(server_label, tool name) of each MCP tool a tool search loaded."""
    return {(tool["server_label"], name) for tool in loaded_tools(items)
            if tool.get("type") == "mcp" for name in tool.get("allowed_tools") or ()}


def loaded_functions(items: list[dict]) -> set[tuple[str | None, str]]:
    """(namespace or None, name) of each function a tool search loaded."""
    loaded = set()
    for tool in loaded_tools(items):
        if tool.get("type") == "function":
            loaded.add((None, tool.get("name")))
        elif tool.get("type") == "namespace":
            loaded |= {(tool.get("name"), inner.get("name")) for inner in tool.get("tools") or ()}
    return loaded
