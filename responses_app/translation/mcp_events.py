"""Stream events of the MCP output items (`mcp_call`, `mcp_list_tools`,
`mcp_approval_request`): pure builders the translator uses, without sequence numbers."""


def new_call_item(item_id: str, server_label: str, name: str,
                  approval_request_id: str | None) -> dict:
    return {"id": item_id, "type": "mcp_call", "status": "in_progress",
            "server_label": server_label, "name": name, "arguments": "",
            "approval_request_id": approval_request_id, "output": None, "error": None}


def call_in_progress(item: dict, output_index: int) -> dict:
    return {"type": "response.mcp_call.in_progress", "item_id": item["id"],
            "output_index": output_index}


def arguments_delta(item: dict, output_index: int, delta: str) -> dict:
    return {"type": "response.mcp_call_arguments.delta", "item_id": item["id"],
            "output_index": output_index, "delta": delta}


def arguments_done(item: dict, output_index: int) -> dict:
    return {"type": "response.mcp_call_arguments.done", "item_id": item["id"],
            "output_index": output_index, "arguments": item["arguments"]}


def call_done(item: dict, output_index: int, output: str | None, error: dict | None) -> list:
    """`.completed` with the output, or `.failed` with the error; then the item is done."""
    item["output"], item["error"] = output, error
    item["status"] = "failed" if error is not None else "completed"
    kind = "response.mcp_call.failed" if error is not None else "response.mcp_call.completed"
    return [{"type": kind, "item_id": item["id"], "output_index": output_index},
            {"type": "response.output_item.done", "output_index": output_index, "item": item}]


def call_unfinished(item: dict, output_index: int, status: str) -> dict:
    """A call cut short by the end of the response (failure, cancel): closed as is."""
    item["status"] = status
    return {"type": "response.output_item.done", "output_index": output_index, "item": item}


def added_and_done(output_index: int, item: dict) -> list:
    """An item complete from the start (an approval request): added, then done."""
    return [{"type": "response.output_item.added", "output_index": output_index,
             "item": dict(item)},
            {"type": "response.output_item.done", "output_index": output_index, "item": item}]


def list_tools_in_progress(item: dict, output_index: int) -> dict:
    return {"type": "response.mcp_list_tools.in_progress", "item_id": item["id"],
            "output_index": output_index}


def list_tools_done(item: dict, output_index: int, tools: list | None, error: str | None) -> list:
    if error is not None:
        item["error"] = error
        kind = "response.mcp_list_tools.failed"
    else:
        item["tools"] = tools
        kind = "response.mcp_list_tools.completed"
    return [{"type": kind, "item_id": item["id"], "output_index": output_index},
            {"type": "response.output_item.done", "output_index": output_index, "item": item}]
