"""Which output item a streamed tool call becomes, by the name the model called.

A hosted tool's name → its `web_search_call` / `file_search_call` (`hosted_items`); an MCP
tool's → an `mcp_call`, or an `mcp_approval_request` when it needs approval; a client-run
tool's → its `shell_call`, `local_shell_call`, `apply_patch_call`, ... (`client_tool_calls`);
a custom tool's → a `custom_tool_call`; anything else → a `function_call`. Pure: the state
machine adds the item to the output and sends what `opening_events` returns.
"""
from . import hosted_items, mcp_events, tool_items
from .client_tool_calls import ADDED_WHEN_DONE, client_call_item
from .custom_tools import custom_call_item


def call_item(options, piece: dict, upstream_name: str) -> tuple[dict, dict | None]:
    """The call's item, and the snapshot its `output_item.added` carries (None: the item is
    added to the output only when it is done)."""
    hosted = options.hosted_tools.get(upstream_name)
    if hosted is not None:
        item = hosted_items.new_item(hosted, options.ids)
        return item, hosted_items.added_snapshot(item)
    mcp = options.mcp_tools.get(upstream_name)
    if mcp is not None and mcp.needs_approval:
        return tool_items.approval_request_item(options.ids("mcpr"), mcp), None
    if mcp is not None:
        item = mcp_events.new_call_item(options.ids("mcp"), mcp.server_label, mcp.name, None)
        return item, dict(item)
    client_tool = options.client_tools.get(upstream_name)
    if client_tool is not None:
        item = client_call_item(options.ids, piece, client_tool)
        return item, (None if item["type"] in ADDED_WHEN_DONE else dict(item))
    if upstream_name in options.custom_tools:
        item = custom_call_item(options.ids, piece, *options.function_names.get(
            upstream_name, (upstream_name, None)))
        return item, dict(item)
    item = tool_items.function_call_item(options.ids, piece, upstream_name,
                                         options.function_names)
    return item, dict(item)


def opening_events(call) -> list[dict]:
    """The events after a call's `output_item.added`: a hosted or MCP call's in_progress."""
    if call.item["type"] in hosted_items.ITEM_TYPES.values():
        return [hosted_items.progress_event(call.item, call.output_index, "in_progress")]
    if call.item["type"] == "mcp_call":
        return [mcp_events.call_in_progress(call.item, call.output_index)]
    return []
