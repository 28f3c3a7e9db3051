"""Validation of a `POST /v1/responses` body into a CreateRequest (no database here).

Input is normalized to the stored item shapes (every item gets an id, message content
becomes a list of parts) so the worker, the input_items endpoint and the history sent
upstream all read one format. Anything the gateway cannot honour is a clear 400.
"""
from dataclasses import dataclass, field

from mcp_tools.request_spec import MCP_ITEM_BUILDERS, check_mcp_tool_count, mcp_tool

from .errors import InvalidRequest
from .ids import new_id

MESSAGE_ROLES = {"user", "assistant", "system", "developer"}
INPUT_PART_TYPES = {"input_text", "input_image", "output_text", "refusal"}
# Hosted tools we do not run: accepted (Codex always sends web_search), not offered upstream.
IGNORED_TOOL_TYPES = {
    "web_search", "web_search_preview", "web_search_preview_2025_03_11", "file_search",
    "computer_use_preview", "code_interpreter", "image_generation", "local_shell", "custom",
}
KNOWN_INCLUDES = {
    "message.output_text.logprobs", "reasoning.encrypted_content",
    "message.input_image.image_url", "file_search_call.results", "web_search_call.results",
    "web_search_call.action.sources", "computer_call_output.output.image_url",
    "code_interpreter_call.outputs",
}
REFUSED_PARAMS = {
    "prompt": "Reusable prompts (`prompt`) are not supported by this gateway.",
}


@dataclass
class CreateRequest:
    model: str
    input_items: list[dict]
    instructions: str | None
    stream: bool
    store: bool
    background: bool
    previous_response_id: str | None
    include: list[str]
    # What the response object echoes and the upstream request is built from.
    params: dict = field(default_factory=dict)
    conversation_id: str | None = None
    # MCP `headers` by server_label: for this run only, never stored.
    mcp_headers: dict = field(default_factory=dict)


def parse_create_request(body) -> CreateRequest:
    if not isinstance(body, dict):
        raise InvalidRequest("The request body must be a JSON object.")
    for name, message in REFUSED_PARAMS.items():
        if body.get(name) is not None:
            raise InvalidRequest(message, param=name, code="unsupported_parameter")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise InvalidRequest("Missing required parameter: 'model'.", param="model",
                             code="missing_required_parameter")
    if "input" not in body or body["input"] is None:
        raise InvalidRequest("Missing required parameter: 'input'.", param="input",
                             code="missing_required_parameter")
    stream = _bool(body, "stream", False)
    store = _bool(body, "store", True)
    background = _bool(body, "background", False)
    if background and not store:
        raise InvalidRequest("Background responses must be stored: background=true needs "
                             "store=true.", param="background", code="invalid_value")
    include = _include(body.get("include"))
    conversation_id = _conversation(body)
    mcp_headers = {}
    params = {
        "tools": _tools(body.get("tools"), mcp_headers),
        "tool_choice": _tool_choice(body.get("tool_choice")),
        "parallel_tool_calls": _bool(body, "parallel_tool_calls", True),
        # None when unset: the upstream keeps its own defaults, the response echoes ours.
        "temperature": _number(body, "temperature", 0, 2, default=None),
        "top_p": _number(body, "top_p", 0, 1, default=None),
        "presence_penalty": _number(body, "presence_penalty", -2, 2, default=None),
        "frequency_penalty": _number(body, "frequency_penalty", -2, 2, default=None),
        "top_logprobs": _integer(body, "top_logprobs", 0, 20, default=None),
        "max_output_tokens": _integer(body, "max_output_tokens", 1, None, default=None),
        "max_tool_calls": _integer(body, "max_tool_calls", 1, None, default=None),
        "text": _text(body.get("text")),
        "reasoning": _reasoning(body.get("reasoning")),
        "truncation": _choice(body, "truncation", {"auto", "disabled"}, "disabled"),
        "metadata": _metadata(body.get("metadata")),
        "user": _string(body, "user"),
        "safety_identifier": _string(body, "safety_identifier"),
        "prompt_cache_key": _string(body, "prompt_cache_key"),
        "service_tier": _string(body, "service_tier") or "default",
    }
    if params["service_tier"] == "auto":
        params["service_tier"] = "default"
    return CreateRequest(
        model=model,
        input_items=normalize_input(body["input"]),
        instructions=_string(body, "instructions"),
        stream=stream,
        store=store,
        background=background,
        previous_response_id=_string(body, "previous_response_id"),
        include=include,
        params=params,
        conversation_id=conversation_id,
        mcp_headers=mcp_headers,
    )


NUL_MESSAGE = "Strings in the request may not contain the NUL character (\\u0000)."


def contains_nul(value) -> bool:
    """True if a NUL character is in any string (or key) of a parsed JSON value."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(contains_nul(k) or contains_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(contains_nul(v) for v in value)
    return False


# --- input items ---------------------------------------------------------------------------

def normalize_input(value, param: str = "input") -> list[dict]:
    """Items in the stored shapes; errors name `param` (`input`, or `items` for conversations)."""
    if isinstance(value, str):
        return [_message({"role": "user", "content": value}, param)]
    if not isinstance(value, list):
        raise InvalidRequest(f"'{param}' must be a string or a list of items.", param=param,
                             code="invalid_type")
    return [_item(item, f"{param}[{i}]") for i, item in enumerate(value)]


def _item(item, param) -> dict:
    if not isinstance(item, dict):
        raise InvalidRequest(f"'{param}' must be an object.", param=param, code="invalid_type")
    kind = item.get("type")
    if kind is None and "role" in item:
        kind = "message"
    builder = ITEM_BUILDERS.get(kind) if isinstance(kind, str) else None
    if builder is None:
        raise InvalidRequest(f"Invalid value for '{param}.type': {kind!r} is not a supported "
                             f"input item type.", param=f"{param}.type", code="invalid_value")
    return builder(item, param)


def _message(item, param) -> dict:
    role = item.get("role")
    if not isinstance(role, str) or role not in MESSAGE_ROLES:
        raise InvalidRequest(f"Invalid value for '{param}.role': must be one of "
                             f"{sorted(MESSAGE_ROLES)}.", param=f"{param}.role", code="invalid_value")
    content = item.get("content")
    if isinstance(content, str):
        part_type = "output_text" if role == "assistant" else "input_text"
        parts = [_text_part(part_type, content)]
    elif isinstance(content, list):
        parts = [_part(p, f"{param}.content[{i}]") for i, p in enumerate(content)]
    else:
        raise InvalidRequest(f"'{param}.content' must be a string or a list of parts.",
                             param=f"{param}.content", code="invalid_type")
    return {"id": _client_id(item, "msg"), "type": "message", "role": role, "content": parts,
            "status": "completed"}


def _text_part(part_type, text):
    if part_type == "output_text":
        return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
    return {"type": part_type, "text": text}


def _part(part, param) -> dict:
    if not isinstance(part, dict):
        raise InvalidRequest(f"'{param}' must be an object.", param=param, code="invalid_type")
    kind = part.get("type")
    if kind in ("input_text", "output_text"):
        return _text_part(kind, _required_string(part, "text", param))
    if kind == "refusal":
        return {"type": "refusal", "refusal": _required_string(part, "refusal", param)}
    if kind == "input_image":
        url = part.get("image_url")
        if not isinstance(url, str) or not url:
            raise InvalidRequest(f"'{param}.image_url' must be a URL or a data URL (file_id is "
                                 f"not supported).", param=f"{param}.image_url", code="invalid_value")
        detail = part.get("detail") or "auto"
        return {"type": "input_image", "image_url": url, "detail": detail}
    raise InvalidRequest(f"Invalid value for '{param}.type': {kind!r} is not a supported content "
                         f"part type.", param=f"{param}.type", code="invalid_value")


def _function_call(item, param) -> dict:
    arguments = item.get("arguments")
    if arguments is None:
        arguments = ""
    if not isinstance(arguments, str):
        raise InvalidRequest(f"'{param}.arguments' must be a string.", param=f"{param}.arguments",
                             code="invalid_type")
    call = {"id": _client_id(item, "fc"), "type": "function_call",
            "call_id": _required_string(item, "call_id", param),
            "name": _required_string(item, "name", param), "arguments": arguments,
            "status": "completed"}
    if isinstance(item.get("namespace"), str) and item["namespace"]:
        call["namespace"] = item["namespace"]
    return call


def _function_call_output(item, param) -> dict:
    output = item.get("output")
    if isinstance(output, list):
        output = "".join(p.get("text", "") for p in output if isinstance(p, dict))
    if not isinstance(output, str):
        raise InvalidRequest(f"'{param}.output' must be a string.", param=f"{param}.output",
                             code="invalid_type")
    return {"id": _client_id(item, "fco"), "type": "function_call_output",
            "call_id": _required_string(item, "call_id", param), "output": output,
            "status": "completed"}


def _item_reference(item, param) -> dict:
    return {"type": "item_reference", "id": _required_string(item, "id", param)}


def _reasoning_item(item, param) -> dict:
    summary = item.get("summary") or []
    content = item.get("content") or []
    if not isinstance(summary, list) or not isinstance(content, list):
        raise InvalidRequest(f"'{param}.summary' and '.content' must be lists.", param=param,
                             code="invalid_type")
    result = {"id": _client_id(item, "rs"), "type": "reasoning", "summary": summary,
              "content": content}
    if item.get("encrypted_content") is not None:
        result["encrypted_content"] = item["encrypted_content"]
    return result


ITEM_BUILDERS = {
    "message": _message,
    "function_call": _function_call,
    "function_call_output": _function_call_output,
    "item_reference": _item_reference,
    "reasoning": _reasoning_item,
    **MCP_ITEM_BUILDERS,
}


def _client_id(item, prefix) -> str:
    value = item.get("id")
    return value if isinstance(value, str) and value else new_id(prefix)


# --- parameters ----------------------------------------------------------------------------

def _tools(value, mcp_headers: dict) -> list[dict]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise InvalidRequest("'tools' must be a list.", param="tools", code="invalid_type")
    tools = []
    for i, tool in enumerate(value):
        param = f"tools[{i}]"
        if not isinstance(tool, dict) or not isinstance(tool.get("type"), str):
            raise InvalidRequest(f"'{param}' must be an object with a 'type'.", param=param,
                                 code="invalid_type")
        kind = tool["type"]
        if kind == "function":
            tools.append(_function_tool(tool, param))
        elif kind == "namespace":
            name = _required_string(tool, "name", param)
            inner = tool.get("tools")
            if not isinstance(inner, list):
                raise InvalidRequest(f"'{param}.tools' must be a list.", param=f"{param}.tools",
                                     code="invalid_type")
            tools.append({**tool, "name": name, "tools": [
                _function_tool(t, f"{param}.tools[{j}]") for j, t in enumerate(inner)]})
        elif kind == "mcp":
            stored, headers = mcp_tool(tool, param)
            tools.append(stored)
            if headers:
                mcp_headers[stored["server_label"]] = headers
        elif kind in IGNORED_TOOL_TYPES:
            tools.append(tool)
        else:
            raise InvalidRequest(f"Invalid value for '{param}.type': {kind!r} is not a supported "
                                 f"tool type.", param=f"{param}.type", code="invalid_value")
    check_mcp_tool_count(tools)
    return tools


def _function_tool(tool, param) -> dict:
    if not isinstance(tool, dict) or tool.get("type", "function") != "function":
        raise InvalidRequest(f"'{param}' must be a function tool.", param=param,
                             code="invalid_value")
    parameters = tool.get("parameters")
    if parameters is not None and not isinstance(parameters, dict):
        raise InvalidRequest(f"'{param}.parameters' must be an object.",
                             param=f"{param}.parameters", code="invalid_type")
    strict = tool.get("strict")
    return {"type": "function", "name": _required_string(tool, "name", param),
            "description": tool.get("description"), "parameters": parameters,
            "strict": True if strict is None else bool(strict)}


def _tool_choice(value):
    if value is None:
        return "auto"
    if value in ("auto", "none", "required"):
        return value
    if isinstance(value, dict):
        if value.get("type") == "function" and isinstance(value.get("name"), str):
            return {"type": "function", "name": value["name"]}
        if value.get("type") == "allowed_tools" and isinstance(value.get("tools"), list):
            mode = value.get("mode", "auto")
            if mode not in ("auto", "required"):
                raise InvalidRequest("'tool_choice.mode' must be 'auto' or 'required'.",
                                     param="tool_choice.mode", code="invalid_value")
            return {"type": "allowed_tools", "mode": mode, "tools": value["tools"]}
    raise InvalidRequest("Invalid 'tool_choice': use 'auto', 'none', 'required', "
                         "{'type': 'function', 'name': ...} or {'type': 'allowed_tools', ...}.",
                         param="tool_choice", code="invalid_value")


def _text(value) -> dict:
    if value is None:
        return {"format": {"type": "text"}}
    if not isinstance(value, dict):
        raise InvalidRequest("'text' must be an object.", param="text", code="invalid_type")
    fmt = value.get("format") or {"type": "text"}
    if not isinstance(fmt, dict) or fmt.get("type") not in ("text", "json_schema", "json_object"):
        raise InvalidRequest("'text.format.type' must be 'text', 'json_schema' or 'json_object'.",
                             param="text.format.type", code="invalid_value")
    if fmt["type"] == "json_schema":
        if not isinstance(fmt.get("schema"), dict) or not isinstance(fmt.get("name"), str):
            raise InvalidRequest("'text.format' of type json_schema needs 'name' and 'schema'.",
                                 param="text.format", code="invalid_value")
        fmt = {"type": "json_schema", "name": fmt["name"], "schema": fmt["schema"],
               "description": fmt.get("description"), "strict": bool(fmt.get("strict", False))}
    result = {"format": fmt}
    if value.get("verbosity") is not None:
        result["verbosity"] = value["verbosity"]
    return result


def _reasoning(value) -> dict | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise InvalidRequest("'reasoning' must be an object.", param="reasoning",
                             code="invalid_type")
    effort = value.get("effort")
    if effort is not None and effort not in ("none", "minimal", "low", "medium", "high", "xhigh"):
        raise InvalidRequest("Invalid 'reasoning.effort'.", param="reasoning.effort",
                             code="invalid_value")
    summary = value.get("summary") or value.get("generate_summary")
    if summary is not None and summary not in ("auto", "concise", "detailed"):
        raise InvalidRequest("Invalid 'reasoning.summary'.", param="reasoning.summary",
                             code="invalid_value")
    return {"effort": effort, "summary": summary}


def _conversation(body) -> str | None:
    """`conversation`: an id or `{"id": ...}`; it excludes `previous_response_id`."""
    value = body.get("conversation")
    if value is None:
        return None
    if isinstance(value, dict):
        value = value.get("id")
    if not isinstance(value, str) or not value:
        raise InvalidRequest("'conversation' must be a conversation id or {'id': ...}.",
                             param="conversation", code="invalid_type")
    if body.get("previous_response_id") is not None:
        raise InvalidRequest("Mutually exclusive parameters: Ensure you are only providing one "
                             "of: 'previous_response_id' or 'conversation'.",
                             code="mutually_exclusive_parameters")
    return value


def parse_metadata(value) -> dict:
    """`metadata` of a response or a conversation: at most 16 short string values."""
    return _metadata(value)


def _metadata(value) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict) or len(value) > 16 or not all(
        isinstance(k, str) and len(k) <= 64 and isinstance(v, str) and len(v) <= 512
        for k, v in value.items()
    ):
        raise InvalidRequest("'metadata' must be an object of at most 16 string values "
                             "(keys up to 64, values up to 512 characters).",
                             param="metadata", code="invalid_value")
    return value


def _include(value) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidRequest("'include' must be a list of strings.", param="include",
                             code="invalid_type")
    unknown = [v for v in value if v not in KNOWN_INCLUDES]
    if unknown:
        raise InvalidRequest(f"Invalid value for 'include': {unknown[0]!r}.", param="include",
                             code="invalid_value")
    return value


def _bool(body, name, default) -> bool:
    value = body.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise InvalidRequest(f"'{name}' must be a boolean.", param=name, code="invalid_type")
    return value


def _number(body, name, low, high, default):
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidRequest(f"'{name}' must be a number.", param=name, code="invalid_type")
    if not low <= value <= high:
        raise InvalidRequest(f"'{name}' must be between {low} and {high}.", param=name,
                             code="invalid_value")
    return float(value)


def _integer(body, name, low, high, default):
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidRequest(f"'{name}' must be an integer.", param=name, code="invalid_type")
    if value < low or (high is not None and value > high):
        bound = f"at least {low}" if high is None else f"between {low} and {high}"
        raise InvalidRequest(f"'{name}' must be {bound}.", param=name, code="invalid_value")
    return value


def _choice(body, name, allowed, default):
    value = body.get(name)
    if value is None:
        return default
    if not isinstance(value, str) or value not in allowed:
        raise InvalidRequest(f"'{name}' must be one of {sorted(allowed)}.", param=name,
                             code="invalid_value")
    return value


def _string(body, name) -> str | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidRequest(f"'{name}' must be a string.", param=name, code="invalid_type")
    return value


def _required_string(obj, name, param) -> str:
    value = obj.get(name)
    if not isinstance(value, str):
        raise InvalidRequest(f"Missing or invalid '{param}.{name}': must be a string.",
                             param=f"{param}.{name}", code="invalid_value")
    return value
