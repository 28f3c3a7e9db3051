"""Input items of a create body (or of a conversation's items) into the stored item shapes.

Every item gets an id and message content becomes a list of parts, so the worker, the
input_items endpoint and the history sent upstream all read one format. `INPUT_ITEM_SCHEMA`
is the OpenAPI description of one input item, derived from the same tables of item types,
and roles the builders use.
"""
from hosted_tools.input_items import HOSTED_ITEM_BUILDERS
from mcp_tools.request_spec import MCP_ITEM_BUILDERS

# runs up a floor: a compaction item in the input is built by the context package, which
# owns the item's one description (compaction, rendering)
from ..context.compaction_items import compaction_input_item
from .fields import required_string
from .client_tool_items import CLIENT_TOOL_ITEM_BUILDERS
from .custom_tool_items import CUSTOM_ITEM_BUILDERS
from ..errors import InvalidRequest
from ..ids import new_id
from .tool_output_parts import tool_output

MESSAGE_ROLES = ("user", "assistant", "system", "developer")
PHASES = ("commentary", "final_answer")


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
                             f"{sorted(MESSAGE_ROLES)}.", param=f"{param}.role",
                             code="invalid_value")
    content = item.get("content")
    if isinstance(content, str):
        part_type = "output_text" if role == "assistant" else "input_text"
        parts = [_text_part(part_type, content)]
    elif isinstance(content, list):
        parts = [_part(p, f"{param}.content[{i}]") for i, p in enumerate(content)]
    else:
        raise InvalidRequest(f"'{param}.content' must be a string or a list of parts.",
                             param=f"{param}.content", code="invalid_type")
    message = {"id": _client_id(item, "msg"), "type": "message", "role": role,
               "content": parts, "status": "completed"}
    phase = item.get("phase")
    if phase is not None:
        if role != "assistant" or phase not in PHASES:
            raise InvalidRequest(f"Invalid value for '{param}.phase': only an assistant message "
                                 f"has a phase, one of {list(PHASES)}.", param=f"{param}.phase",
                                 code="invalid_value")
        message["phase"] = phase
    return message


def _text_part(part_type, text):
    if part_type == "output_text":
        return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
    return {"type": part_type, "text": text}


def _part(part, param) -> dict:
    if not isinstance(part, dict):
        raise InvalidRequest(f"'{param}' must be an object.", param=param, code="invalid_type")
    kind = part.get("type")
    if kind in ("input_text", "output_text"):
        return _text_part(kind, required_string(part, "text", param))
    if kind == "refusal":
        return {"type": "refusal", "refusal": required_string(part, "refusal", param)}
    if kind == "input_image":
        url = part.get("image_url")
        if not isinstance(url, str) or not url:
            raise InvalidRequest(f"'{param}.image_url' must be a URL or a data URL (file_id is "
                                 f"not supported).", param=f"{param}.image_url",
                                 code="invalid_value")
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
            "call_id": required_string(item, "call_id", param),
            "name": required_string(item, "name", param), "arguments": arguments,
            "status": "completed"}
    if isinstance(item.get("namespace"), str) and item["namespace"]:
        call["namespace"] = item["namespace"]
    return call


def _function_call_output(item, param) -> dict:
    output = tool_output(item.get("output"), f"{param}.output")
    return {"id": _client_id(item, "fco"), "type": "function_call_output",
            "call_id": required_string(item, "call_id", param), "output": output,
            "status": "completed"}


def _item_reference(item, param) -> dict:
    return {"type": "item_reference", "id": required_string(item, "id", param)}


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
    "compaction": compaction_input_item,
    **MCP_ITEM_BUILDERS,
    **CUSTOM_ITEM_BUILDERS,
    **CLIENT_TOOL_ITEM_BUILDERS,
    **HOSTED_ITEM_BUILDERS,
}


def _client_id(item, prefix) -> str:
    value = item.get("id")
    return value if isinstance(value, str) and value else new_id(prefix)


INPUT_ITEM_SCHEMA = {
    "type": "object",
    "description": "An input item, as in the OpenAI Responses API; a message may leave out "
                   "`type`. Described by its common fields and left open, as the OpenAI SDK's "
                   "models are.",
    "additionalProperties": True,
    "properties": {
        "type": {"enum": list(ITEM_BUILDERS)},
        "id": {"type": "string"},
        "role": {"enum": list(MESSAGE_ROLES)},
    },
}
