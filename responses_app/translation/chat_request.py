"""Responses request + conversation items → a Chat Completions request body (pure).

The message list must be valid for strict backends: every `tool` message follows the
assistant message whose `tool_calls` holds its id, calls of one turn share one assistant
message, unanswered calls are dropped and duplicate outputs are dropped (a safety net: on
the way to the upstream no call is left unanswered). The request's items are first repaired (translation.history_repair: calls and outputs paired and grouped,
consecutive user messages merged when asked), with custom tool calls as function calls
(custom_tools), and shell, local shell and apply_patch calls too (client_tools).
"""
from dataclasses import dataclass, field

from .client_tools import (
    CALL_TYPES, client_items_as_function_items, client_tool_as_function, client_tool_names,
    tools_from_items,
)
from .custom_tools import (
    custom_items_as_function_items, custom_tool_as_function, custom_tool_names,
)
from .history_repair import merge_consecutive_users, repair_items
from .hosted_items import function_for_tool_type, hosted_items_as_function_items
from .mcp_history import NAMESPACE_SEPARATOR, mcp_items_as_function_items
from .tool_output_content import output_for_upstream, show_images

SYSTEM_ROLES = {"system": "system", "developer": "system"}
LOGPROBS_INCLUDE = "message.output_text.logprobs"


@dataclass
class ChatRequest:
    body: dict
    # upstream function name -> (name, namespace) for flattened namespace tools
    function_names: dict = field(default_factory=dict)
    # upstream function names that stand for custom tools
    custom_tools: frozenset = frozenset()
    # upstream function name -> client-run tool type (shell, local_shell, apply_patch)
    client_tools: dict = field(default_factory=dict)
    # the history repairs made (translation.history_repair), for the run to log and count
    repairs: list = field(default_factory=list)


def build_chat_request(*, model: str, instructions: str | None, items: list[dict],
                       params: dict, include: list[str], max_tokens_param: str,
                       merge_user_messages: bool = False, images: bool = True,
                       passthrough: tuple = ()) -> ChatRequest:
    """`images`: the route's model takes images (else they reach it as text);
    `passthrough`: the create parameters the route's backend is sent as they are
    (prompt_cache_key, prompt_cache_retention, service_tier, safety_identifier)."""
    messages = []
    if instructions:
        messages.append({"role": "system", "content": instructions})
    repaired = repair_items(client_items_as_function_items(custom_items_as_function_items(
        mcp_items_as_function_items(hosted_items_as_function_items(items)))))
    history, repairs = _messages(repaired.items, images), repaired.repairs
    if merge_user_messages:
        merged = merge_consecutive_users(history)
        history, repairs = merged.items, repairs + merged.repairs
    messages.extend(history)
    body = {"model": model, "messages": messages, "stream": True,
            "stream_options": {"include_usage": True}}
    for name in ("temperature", "top_p", "presence_penalty", "frequency_penalty"):
        if params.get(name) is not None:
            body[name] = params[name]
    if params.get("max_output_tokens") is not None:
        body[max_tokens_param] = params["max_output_tokens"]
    offered = [*(params.get("tools") or []), *tools_from_items(items)]
    tools, function_names = _chat_tools(offered)
    tools, tool_choice = _apply_tool_choice(tools, params.get("tool_choice"), function_names)
    if tools:
        body["tools"] = tools
        body["tool_choice"] = tool_choice
        body["parallel_tool_calls"] = params.get("parallel_tool_calls", True)
    response_format = _response_format((params.get("text") or {}).get("format"))
    if response_format:
        body["response_format"] = response_format
    effort = (params.get("reasoning") or {}).get("effort")
    if effort:
        body["reasoning_effort"] = effort
    user = params.get("safety_identifier") or params.get("user")
    if user:
        body["user"] = user
    for name in passthrough:
        if params.get(name) is not None:
            body[name] = params[name]
    if LOGPROBS_INCLUDE in include or params.get("top_logprobs"):
        body["logprobs"] = True
        if params.get("top_logprobs"):
            body["top_logprobs"] = params["top_logprobs"]
    return ChatRequest(body=body, function_names=function_names,
                       custom_tools=custom_tool_names(offered),
                       client_tools=client_tool_names(offered),
                       repairs=repairs)


# --- messages ------------------------------------------------------------------------------

def messages_from_items(items: list[dict], images: bool = True) -> list[dict]:
    return _messages(mcp_items_as_function_items(hosted_items_as_function_items(items)), images)


def _messages(items: list[dict], images: bool) -> list[dict]:
    """The chat messages of items already in function form (no MCP or hosted call items)."""
    calls_by_id = {i["call_id"]: i for i in items if i.get("type") == "function_call"}
    messages: list[dict] = []
    answered: set[str] = set()
    pending_images: list = []  # (call_id, image parts) of the tool messages just written
    for item in items:
        kind = item.get("type")
        last = messages[-1] if messages else None
        if kind == "message":
            message = _message(item, images)
            if message is None:
                continue
            if message["role"] == "assistant" and last is not None and last["role"] == "assistant":
                last["content"] = _join(last["content"], message["content"])
            else:
                messages.append(message)
        elif kind == "function_call":
            call = _chat_call(item)
            if last is not None and last["role"] == "assistant":
                last.setdefault("tool_calls", []).append(call)
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            call_id = item["call_id"]
            if call_id in answered:
                continue
            if call_id not in _trailing_call_ids(messages):
                stored = calls_by_id.get(call_id)
                call = _chat_call(stored) if stored else {
                    "id": call_id, "type": "function",
                    "function": {"name": "function", "arguments": "{}"}}
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
            text, image_parts = output_for_upstream(item["output"], images)
            messages.append({"role": "tool", "tool_call_id": call_id, "content": text})
            if image_parts:
                pending_images.append((call_id, image_parts))
            answered.add(call_id)
        # reasoning and anything else is not sent upstream
        if pending_images and kind != "function_call_output":
            show_images(messages, pending_images)
    if pending_images:
        show_images(messages, pending_images)
    return _drop_unanswered_calls(messages, answered)


def _chat_call(item) -> dict:
    return {"id": item["call_id"], "type": "function",
            "function": {"name": _upstream_name(item), "arguments": item["arguments"] or "{}"}}


def _trailing_call_ids(messages) -> set[str]:
    """Ids of the assistant tool calls that tool messages at the end may still answer."""
    for message in reversed(messages):
        if message["role"] == "tool":
            continue
        if message["role"] == "assistant":
            return {call["id"] for call in message.get("tool_calls") or ()}
        return set()
    return set()


def _drop_unanswered_calls(messages, answered) -> list[dict]:
    """Keep in each assistant message only the calls its following tool messages answer."""
    result = []
    for position, message in enumerate(messages):
        calls = message.get("tool_calls")
        if calls is not None:
            replies = set()
            for later in messages[position + 1:]:
                if later["role"] != "tool":
                    break
                replies.add(later["tool_call_id"])
            kept = [call for call in calls if call["id"] in replies]
            if kept:
                message["tool_calls"] = kept
            else:
                del message["tool_calls"]
                if not message.get("content"):
                    continue
        result.append(message)
    return result


def _message(item, images: bool = True) -> dict | None:
    role = item["role"]
    parts = item.get("content") or []
    if role == "user" and not images:
        return {"role": "user", "content": output_for_upstream(parts, False)[0]}
    if role == "user":
        for part in parts:
            if part.get("type") == "input_image":
                return {"role": "user", "content": [_user_part(p) for p in parts]}
        return {"role": "user", "content": _parts_text(parts)}
    text = _parts_text(parts)
    if role == "assistant":
        return {"role": "assistant", "content": text} if text else None
    return {"role": SYSTEM_ROLES[role], "content": text}


def _parts_text(parts) -> str:
    """The parts' texts joined by newlines (one part, the most common: its text, as the join
    returns it)."""
    if len(parts) == 1:
        text = _part_text(parts[0])
        if type(text) is str:
            return text
    return "\n".join([_part_text(p) for p in parts])


def _part_text(part) -> str:
    return part.get("text") or part.get("refusal") or ""


def _user_part(part) -> dict:
    if part.get("type") == "input_image":
        return {"type": "image_url",
                "image_url": {"url": part["image_url"], "detail": part.get("detail") or "auto"}}
    return {"type": "text", "text": _part_text(part)}


def _join(first, second) -> str:
    return "\n".join(text for text in (first, second) if text)


def _upstream_name(call_item) -> str:
    namespace = call_item.get("namespace")
    name = call_item["name"]
    return f"{namespace}{NAMESPACE_SEPARATOR}{name}" if namespace else name


# --- tools and formats ---------------------------------------------------------------------

def _chat_tools(tools: list[dict]) -> tuple[list[dict], dict]:
    chat_tools, names = [], {}
    for tool in tools:
        if tool.get("defer_loading"):
            continue  # offered once a tool search loads it (translation.client_tools)
        if tool["type"] == "function":
            chat_tools.append(_chat_function(tool, tool["name"]))
        elif tool["type"] == "custom":
            chat_tools.append(custom_tool_as_function(tool))
        elif tool["type"] in CALL_TYPES:
            chat_tools.append(client_tool_as_function(tool))
        elif tool["type"] == "namespace":
            for inner in tool["tools"]:
                if inner.get("defer_loading"):
                    continue
                upstream = f"{tool['name']}{NAMESPACE_SEPARATOR}{inner['name']}"
                names[upstream] = (inner["name"], tool["name"])
                chat_tools.append(custom_tool_as_function({**inner, "name": upstream})
                                  if inner.get("type") == "custom"
                                  else _chat_function(inner, upstream))
    return chat_tools, names


def _chat_function(tool, name) -> dict:
    function = {"name": name,
                "parameters": tool.get("parameters") or {"type": "object", "properties": {}}}
    if tool.get("description"):
        function["description"] = tool["description"]
    if tool.get("strict"):
        function["strict"] = True
    return {"type": "function", "function": function}


def _apply_tool_choice(tools, choice, function_names):
    if not tools:
        return [], None
    if choice is None or isinstance(choice, str):
        return tools, choice or "auto"
    if choice["type"] in ("function", "custom"):
        upstream = next((up for up, (name, _) in function_names.items()
                         if name == choice["name"]), choice["name"])
        return tools, {"type": "function", "function": {"name": upstream}}
    if choice["type"] in CALL_TYPES:  # {"type": "shell"}: its function bears its name
        return tools, {"type": "function", "function": {"name": choice["type"]}}
    if choice["type"] != "allowed_tools":  # a hosted tool's {"type": "web_search"}
        return tools, {"type": "function",
                       "function": {"name": function_for_tool_type(choice["type"])}}
    allowed = {t.get("name") or function_for_tool_type(t.get("type"))
               or (t.get("type") if t.get("type") in CALL_TYPES else None)
               for t in choice["tools"] if isinstance(t, dict)}
    kept = [t for t in tools
            if function_names.get(t["function"]["name"], (t["function"]["name"],))[0] in allowed
            or t["function"]["name"] in allowed]
    if not kept:
        return [], None
    return kept, choice["mode"]


def _response_format(fmt) -> dict | None:
    if not fmt or fmt.get("type") == "text":
        return None
    if fmt["type"] == "json_object":
        return {"type": "json_object"}
    schema = {"name": fmt["name"], "schema": fmt["schema"], "strict": fmt.get("strict", False)}
    if fmt.get("description"):
        schema["description"] = fmt["description"]
    return {"type": "json_schema", "json_schema": schema}
