"""A `POST /v1/chat/completions` body, validated (pure): what the gateway reads of it and
the body the upstream gets.

The upstream gets the body as the client sent it, unknown fields included (backends extend
the schema), except what the gateway owns: `store` and `metadata` (it stores completions
itself), `stream` and `stream_options` (the worker always streams from the upstream and
asks for usage: the client's own choice is applied on the way back), reasoning parameters
whose values are all null (some backends refuse them), and `tool` messages repaired as
/v1/responses repairs its history (message_repair.py).
"""
from dataclasses import dataclass

from responses_app.create.fields import checked_model_length
from responses_app.errors import InvalidRequest

from .message_repair import repair_messages

GATEWAY_FIELDS = ("store", "metadata", "stream", "stream_options")
REASONING_FIELDS = ("reasoning_effort", "reasoning", "thinking")
ROLES = {"system", "developer", "user", "assistant", "tool", "function"}
MAX_METADATA_PAIRS, MAX_KEY, MAX_VALUE = 16, 64, 512


@dataclass
class ChatCreate:
    model: str
    stream: bool
    store: bool
    include_usage: bool
    metadata: dict
    messages: list  # as sent (what /messages shows)
    body: dict  # what the upstream gets (before the MCP functions are added)
    client_function_names: list
    repairs: list


def parse_chat_create(payload) -> ChatCreate:
    """The validated create request (InvalidRequest, OpenAI's 400, if it is not one)."""
    if not isinstance(payload, dict):
        raise InvalidRequest("The request body must be a JSON object.", code="invalid_type")
    model = payload.get("model")
    if not isinstance(model, str) or not model:
        raise InvalidRequest("Missing required parameter: 'model'.", param="model",
                             code="missing_required_parameter")
    checked_model_length(model)
    messages = payload.get("messages")
    if not isinstance(messages, list) or not messages:
        raise InvalidRequest("'messages' must be a non-empty array of messages.",
                             param="messages", code="invalid_value")
    for index, message in enumerate(messages):
        _check_message(message, index)
    stream = _flag(payload, "stream")
    options = payload.get("stream_options")
    if options is not None and not isinstance(options, dict):
        raise InvalidRequest("'stream_options' must be an object.", param="stream_options",
                             code="invalid_type")
    include_usage = bool((options or {}).get("include_usage"))
    if options is not None and not stream:
        raise InvalidRequest("The 'stream_options' parameter is only allowed when 'stream' is "
                             "enabled.", param="stream_options", code="invalid_value")
    tools = payload.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise InvalidRequest("'tools' must be an array.", param="tools", code="invalid_type")
    names = [tool["function"]["name"] for tool in tools or ()
             if isinstance(tool, dict) and isinstance(tool.get("function"), dict)
             and isinstance(tool["function"].get("name"), str)]
    repaired = repair_messages(messages)
    body = {key: value for key, value in payload.items()
            if key not in GATEWAY_FIELDS and not _null_reasoning(key, value)}
    body["messages"] = repaired.items
    body["stream"] = True
    body["stream_options"] = {"include_usage": True}
    return ChatCreate(model=model, stream=stream, store=_flag(payload, "store"),
                      include_usage=include_usage,
                      metadata=validated_metadata(payload.get("metadata")),
                      messages=messages, body=body, client_function_names=names,
                      repairs=repaired.repairs)


def _check_message(message, index: int) -> None:
    param = f"messages[{index}]"
    if not isinstance(message, dict):
        raise InvalidRequest(f"Invalid type for '{param}': expected an object.", param=param,
                             code="invalid_type")
    role = message.get("role")
    if not isinstance(role, str) or role not in ROLES:
        raise InvalidRequest(f"Invalid value for '{param}.role': expected one of "
                             f"{', '.join(sorted(ROLES))}.", param=f"{param}.role",
                             code="invalid_value")
    if role == "tool" and not isinstance(message.get("tool_call_id"), str):
        raise InvalidRequest(f"Missing required parameter: '{param}.tool_call_id'.",
                             param=f"{param}.tool_call_id", code="missing_required_parameter")
    calls = message.get("tool_calls")
    if calls is not None and (not isinstance(calls, list) or not all(
            isinstance(call, dict) and isinstance(call.get("id"), str) for call in calls)):
        raise InvalidRequest(f"Invalid value for '{param}.tool_calls': each call needs an 'id'.",
                             param=f"{param}.tool_calls", code="invalid_value")


def _flag(payload: dict, name: str) -> bool:
    value = payload.get(name)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise InvalidRequest(f"Invalid type for '{name}': expected a boolean.", param=name,
                             code="invalid_type")
    return value


def _null_reasoning(key: str, value) -> bool:
    """A reasoning parameter that says nothing: null, or an object of nulls."""
    if key not in REASONING_FIELDS:
        return False
    if isinstance(value, dict):
        return all(item is None for item in value.values())
    return value is None


def validated_metadata(value) -> dict:
    """OpenAI's metadata rules: up to 16 string pairs, keys ≤ 64, values ≤ 512 characters."""
    if value is None:
        return {}
    if not isinstance(value, dict) or len(value) > MAX_METADATA_PAIRS or not all(
            isinstance(k, str) and isinstance(v, str) and len(k) <= MAX_KEY
            and len(v) <= MAX_VALUE for k, v in value.items()):
        raise InvalidRequest(
            f"'metadata' must be an object of at most {MAX_METADATA_PAIRS} string pairs "
            f"(keys up to {MAX_KEY} characters, values up to {MAX_VALUE}).",
            param="metadata", code="invalid_value")
    return value
