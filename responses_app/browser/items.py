"""Input and output items made readable: one uniform view per item, whatever its type.

Known types (messages with their phase, reasoning, compactions, function and custom tool
calls and outputs, MCP tool lists, calls and approvals) get a title and labelled blocks; any
other type shows its fields as JSON, so an item type added later still renders. Text is
never marked safe: templates escape it.
"""
import json
from dataclasses import dataclass, field

from ..context.compaction_items import is_unfinished, summary_of

MAX_BLOCK_CHARS = 20_000


@dataclass
class Block:
    label: str
    text: str
    style: str = "text"  # text | code | error


@dataclass
class ItemView:
    type: str
    title: str
    kind: str  # the CSS family: message, reasoning, call, output, mcp, approval, other
    id: str | None = None
    status: str | None = None
    meta: list[tuple[str, str]] = field(default_factory=list)
    blocks: list[Block] = field(default_factory=list)


def pretty_json(value) -> str:
    """Indented JSON; a string holding JSON is parsed first, any other string kept as is."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False, default=str)


def _clip(text: str) -> str:
    if len(text) <= MAX_BLOCK_CHARS:
        return text
    return f"{text[:MAX_BLOCK_CHARS]}\n… ({len(text) - MAX_BLOCK_CHARS:,} more characters)"


def _block(label: str, text, style: str = "text") -> Block:
    return Block(label, _clip(text if isinstance(text, str) else pretty_json(text)), style)


def _content_blocks(content) -> list[Block]:
    """The parts of a message's content (a plain string counts as one text part)."""
    if content is None:
        return []
    if isinstance(content, str):
        return [_block("", content)]
    blocks = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in ("input_text", "output_text", "text", "summary_text", "reasoning_text"):
            blocks.append(_block("", part.get("text") or ""))
        elif kind == "refusal":
            blocks.append(_block("refusal", part.get("refusal") or "", "error"))
        elif kind == "input_image":
            blocks.append(_block("image", part.get("image_url") or part.get("file_id") or ""))
        else:
            blocks.append(_block(kind or "part", part, "code"))
    return blocks


def _message(item: dict) -> ItemView:
    meta = [("phase", item["phase"])] if item.get("phase") else []
    return ItemView(type="message", title=item.get("role") or "message", kind="message",
                    meta=meta, blocks=_content_blocks(item.get("content")))


def _reasoning(item: dict) -> ItemView:
    blocks = [Block("summary", b.text) for b in _content_blocks(item.get("summary"))]
    blocks += _content_blocks(item.get("content"))
    if item.get("encrypted_content"):
        blocks.append(Block("encrypted", f"{len(item['encrypted_content']):,} characters"))
    return ItemView(type="reasoning", title="reasoning", kind="reasoning", blocks=blocks)


def _compaction(item: dict) -> ItemView:
    """A compaction: the summary it seals, opened for the admin's staff only (the browser's
    views check the admin permission); the client only ever sees the token."""
    summary = summary_of(item)
    if is_unfinished(item):
        block = Block("summary", "(none: cut before its summary was written; it replaces "
                                 "nothing)", "error")
    elif summary is None:
        block = Block("summary", "(not readable here: sealed elsewhere or under an older "
                                 "SECRET_KEY)", "error")
    else:
        block = _block("summary (replaces the conversation before it)", summary)
    return ItemView(type="compaction", title="compaction", kind="reasoning", blocks=[block])


def _function_call(item: dict) -> ItemView:
    return ItemView(type="function_call", title=f"function call {item.get('name', '')}",
                    kind="call", meta=[("call_id", item.get("call_id") or "")],
                    blocks=[_block("arguments", pretty_json(item.get("arguments") or "{}"),
                                   "code")])


def _function_call_output(item: dict) -> ItemView:
    return ItemView(type="function_call_output", title="function output", kind="output",
                    meta=[("call_id", item.get("call_id") or "")],
                    blocks=[_block("output", pretty_json(item.get("output", "")), "code")])


def _custom_tool_call(item: dict) -> ItemView:
    return ItemView(type="custom_tool_call", title=f"custom tool call {item.get('name', '')}",
                    kind="call", meta=[("call_id", item.get("call_id") or "")],
                    blocks=[_block("input", item.get("input") or "", "code")])


def _custom_tool_call_output(item: dict) -> ItemView:
    return ItemView(type="custom_tool_call_output", title="custom tool output", kind="output",
                    meta=[("call_id", item.get("call_id") or "")],
                    blocks=[_block("output", item.get("output") or "", "code")])


def _mcp_list_tools(item: dict) -> ItemView:
    tools = item.get("tools") or []
    lines = [f"{tool.get('name', '?')}: {tool['description']}" if tool.get("description")
             else str(tool.get("name", "?")) for tool in tools if isinstance(tool, dict)]
    blocks = [_block(f"{len(tools)} tools", "\n".join(lines))]
    if item.get("error"):
        blocks.append(_block("error", item["error"], "error"))
    return ItemView(type="mcp_list_tools", title=f"MCP tools of {item.get('server_label', '')}",
                    kind="mcp", blocks=blocks)


def _mcp_call(item: dict) -> ItemView:
    blocks = [_block("arguments", pretty_json(item.get("arguments") or "{}"), "code")]
    if item.get("output") is not None:
        blocks.append(_block("output", pretty_json(item["output"]), "code"))
    if item.get("error"):
        blocks.append(_block("error", item["error"], "error"))
    meta = [("approval", item["approval_request_id"])] if item.get("approval_request_id") else []
    return ItemView(type="mcp_call", kind="mcp", meta=meta, blocks=blocks,
                    title=f"MCP call {item.get('server_label', '')}.{item.get('name', '')}")


def _mcp_approval_request(item: dict) -> ItemView:
    return ItemView(type="mcp_approval_request", kind="approval",
                    title=f"approval requested: {item.get('server_label', '')}."
                          f"{item.get('name', '')}",
                    blocks=[_block("arguments", pretty_json(item.get("arguments") or "{}"),
                                   "code")])


def _mcp_approval_response(item: dict) -> ItemView:
    blocks = [_block("reason", item["reason"])] if item.get("reason") else []
    return ItemView(type="mcp_approval_response", kind="approval", blocks=blocks,
                    title="approval " + ("granted" if item.get("approve") else "denied"),
                    meta=[("request", item.get("approval_request_id") or "")])


def _other(item: dict) -> ItemView:
    rest = {k: v for k, v in item.items() if k not in ("id", "type", "status")}
    return ItemView(type=str(item.get("type")), title=str(item.get("type") or "item"),
                    kind="other", blocks=[_block("", rest, "code")] if rest else [])


DESCRIBERS = {
    "message": _message,
    "reasoning": _reasoning,
    "compaction": _compaction,
    "function_call": _function_call,
    "function_call_output": _function_call_output,
    "custom_tool_call": _custom_tool_call,
    "custom_tool_call_output": _custom_tool_call_output,
    "mcp_list_tools": _mcp_list_tools,
    "mcp_call": _mcp_call,
    "mcp_approval_request": _mcp_approval_request,
    "mcp_approval_response": _mcp_approval_response,
}


def describe_item(item) -> ItemView:
    """The readable view of one stored item; never raises on an unexpected shape."""
    if not isinstance(item, dict):
        return ItemView(type="unknown", title="item", kind="other", blocks=[_block("", item,
                                                                                   "code")])
    kind = item.get("type") or ("message" if "role" in item else None)
    try:
        view = DESCRIBERS.get(kind, _other)(item)
    except (AttributeError, TypeError, ValueError):
        view = _other(item)
    view.id = item.get("id")
    view.status = item.get("status")
    return view


def describe_items(items) -> list[ItemView]:
    return [describe_item(item) for item in items or ()]
