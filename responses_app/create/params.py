"""The structured parameters of a create body: each parser with its schema beside it.

Every kind here is a `Custom` of responses_app.create.fields: the parser that normalizes the
value (or raises the 400) and the JSON Schema of the OpenAPI document, both written from the
same constants (tool types, tool_choice modes, text formats, reasoning efforts, includables,
metadata limits). The table that names them is responses_app.create.body.
"""
from hosted_tools.catalog import HOSTED_TYPES, WEB_SEARCH_TYPES
from hosted_tools.request_spec import check_hosted_tool_count, hosted_tool
from mcp_tools.request_spec import check_mcp_tool_count, mcp_tool

from .client_tool_items import CLIENT_TOOL_TYPES, check_client_tool_names, client_tool
from .tool_search_spec import TOOL_SEARCH, check_deferred_tools
from .fields import (
    MODEL_MAX_LENGTH, Custom, checked_model_length, defer_loading, nullable, ref, required_name,
    type_error)
from .custom_tool_items import custom_tool
from ..errors import InvalidRequest
from .input_items import normalize_input

# Hosted tools: run, refused or dropped, as hosted_tools.catalog says.
TOOL_TYPES = ("function", "namespace", "mcp", "custom", *CLIENT_TOOL_TYPES, TOOL_SEARCH,
              *HOSTED_TYPES)
TOOL_CHOICE_MODES = ("auto", "none", "required")
TEXT_FORMATS = ("text", "json_schema", "json_object")
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")
REASONING_SUMMARIES = ("auto", "concise", "detailed")
INCLUDABLE = (
    "message.output_text.logprobs", "reasoning.encrypted_content",
    "message.input_image.image_url", "file_search_call.results", "web_search_call.results",
    "web_search_call.action.sources", "computer_call_output.output.image_url",
    "code_interpreter_call.outputs",
)
METADATA_KEYS, METADATA_KEY_LENGTH, METADATA_VALUE_LENGTH = 16, 64, 512
STRING = {"type": "string"}
OBJECT = {"type": "object", "additionalProperties": True}


def _model(value, param) -> str:
    if not isinstance(value, str):
        raise type_error("model", "a string", value)
    if not value:
        raise InvalidRequest("Missing required parameter: 'model'.", param="model",
                             code="missing_required_parameter")
    return checked_model_length(value)


MODEL = Custom(_model, {"type": "string", "minLength": 1, "maxLength": MODEL_MAX_LENGTH})
INPUT = Custom(normalize_input, {"oneOf": [STRING, {"type": "array", "items": ref("InputItem")}]})


def _tools(value, param) -> tuple[list[dict], dict, list[str], str | None]:
    """The tools as stored and echoed, the MCP `headers` by server_label (this run only),
    the types of the hosted tools dropped (hosted_tools.catalog), and where the web search
    tool kept is (`tools[i]`: whether a backend serves the tenant is settled later)."""
    if not isinstance(value, list):
        raise InvalidRequest("'tools' must be a list.", param="tools", code="invalid_type")
    tools, mcp_headers, dropped, web_search_param = [], {}, [], None
    for i, tool in enumerate(value):
        param = f"tools[{i}]"
        if not isinstance(tool, dict) or not isinstance(tool.get("type"), str):
            raise InvalidRequest(f"'{param}' must be an object with a 'type'.", param=param,
                                 code="invalid_type")
        kind = tool["type"]
        if kind == "function":
            tools.append(_function_tool(tool, param))
        elif kind == "namespace":
            tools.append(_namespace_tool(tool, param))
        elif kind == "custom":
            tools.append(custom_tool(tool, param))
        elif kind in (*CLIENT_TOOL_TYPES, TOOL_SEARCH):
            tools.append(client_tool(tool, param))
        elif kind == "mcp":
            stored, headers = mcp_tool(tool, param)
            tools.append(stored)
            if headers:
                mcp_headers[stored["server_label"]] = headers
        elif kind in HOSTED_TYPES:
            kept = hosted_tool(tool, param)
            if kept is None:
                dropped.append(kind)
            else:
                tools.append(kept)
                if kind in WEB_SEARCH_TYPES:
                    web_search_param = param
        else:
            raise InvalidRequest(f"Invalid value for '{param}.type': {kind!r} is not a supported "
                                 f"tool type.", param=f"{param}.type", code="invalid_value")
    check_mcp_tool_count(tools)
    check_hosted_tool_count(tools)
    check_client_tool_names(tools)
    check_deferred_tools(tools)
    return tools, mcp_headers, dropped, web_search_param


def _namespace_tool(tool, param) -> dict:
    name = required_name(tool, "name", param)
    inner = tool.get("tools")
    if not isinstance(inner, list):
        raise InvalidRequest(f"'{param}.tools' must be a list.", param=f"{param}.tools",
                             code="invalid_type")
    return {**tool, "name": name, "tools": [
        _namespace_member(t, f"{param}.tools[{j}]") for j, t in enumerate(inner)]}


def _namespace_member(tool, param) -> dict:
    """A namespace groups function and custom tools (Codex's code mode: `functions.exec`)."""
    if isinstance(tool, dict) and tool.get("type") == "custom":
        return custom_tool(tool, param)
    return _function_tool(tool, param)


def _function_tool(tool, param) -> dict:
    if not isinstance(tool, dict) or tool.get("type", "function") != "function":
        raise InvalidRequest(f"'{param}' must be a function or custom tool.", param=param,
                             code="invalid_value")
    parameters = tool.get("parameters")
    if parameters is not None and not isinstance(parameters, dict):
        raise InvalidRequest(f"'{param}.parameters' must be an object.",
                             param=f"{param}.parameters", code="invalid_type")
    strict = tool.get("strict")
    stored = {"type": "function", "name": required_name(tool, "name", param),
              "description": tool.get("description"), "parameters": parameters,
              "strict": True if strict is None else bool(strict)}
    if defer_loading(tool, param):  # offered once a tool search loads it
        stored["defer_loading"] = True
    return stored


TOOLS = Custom(_tools, {"type": "array", "items": {"oneOf": [
    ref("CustomTool"),
    {"type": "object", "required": ["type"], "additionalProperties": True,
     "properties": {"type": {"enum": [t for t in TOOL_TYPES if t != "custom"]}}}]}})


def _tool_choice(value, param):
    if value in TOOL_CHOICE_MODES:
        return value
    if isinstance(value, dict):
        if value.get("type") in ("function", "custom") and isinstance(value.get("name"), str):
            return {"type": value["type"], "name": value["name"]}
        if value.get("type") in (*HOSTED_TYPES, *CLIENT_TOOL_TYPES, TOOL_SEARCH):  # "shell"
            return {"type": value["type"]}
        if value.get("type") == "allowed_tools" and isinstance(value.get("tools"), list):
            mode = value.get("mode", "auto")
            if mode not in ("auto", "required"):
                raise InvalidRequest("'tool_choice.mode' must be 'auto' or 'required'.",
                                     param="tool_choice.mode", code="invalid_value")
            return {"type": "allowed_tools", "mode": mode, "tools": value["tools"]}
    raise InvalidRequest("Invalid 'tool_choice': use 'auto', 'none', 'required', "
                         "{'type': 'function', 'name': ...}, {'type': 'allowed_tools', ...} "
                         "or a hosted tool's {'type': ...}.",
                         param="tool_choice", code="invalid_value")


TOOL_CHOICE = Custom(_tool_choice, {"oneOf": [
    {"enum": list(TOOL_CHOICE_MODES)},
    {"type": "object", "required": ["type", "name"], "additionalProperties": True,
     "properties": {"type": {"enum": ["function", "custom"]}, "name": STRING}},
    {"type": "object", "required": ["type"], "additionalProperties": True,
     "properties": {"type": {"enum": [*HOSTED_TYPES, *CLIENT_TOOL_TYPES, TOOL_SEARCH]}}},
    {"type": "object", "required": ["type", "tools"], "additionalProperties": True,
     "properties": {"type": {"const": "allowed_tools"}, "mode": {"enum": ["auto", "required"]},
                    "tools": {"type": "array", "items": OBJECT}}},
]})


def _text(value, param) -> dict:
    if not isinstance(value, dict):
        raise type_error("text", "an object", value)
    fmt = value.get("format") or {"type": "text"}
    if not isinstance(fmt, dict) or fmt.get("type") not in TEXT_FORMATS:
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


TEXT = Custom(_text, {"type": "object", "additionalProperties": True, "properties": {
    "format": nullable({"type": "object", "required": ["type"], "additionalProperties": True,
                        "properties": {"type": {"enum": list(TEXT_FORMATS)}}})}})


def _reasoning(value, param) -> dict:
    if not isinstance(value, dict):
        raise type_error("reasoning", "an object", value)
    effort = value.get("effort")
    if effort is not None and effort not in REASONING_EFFORTS:
        raise InvalidRequest("Invalid 'reasoning.effort'.", param="reasoning.effort",
                             code="invalid_value")
    summary = value.get("summary") or value.get("generate_summary")
    if summary is not None and summary not in REASONING_SUMMARIES:
        raise InvalidRequest("Invalid 'reasoning.summary'.", param="reasoning.summary",
                             code="invalid_value")
    return {"effort": effort, "summary": summary}


REASONING = Custom(_reasoning, {"type": "object", "additionalProperties": True, "properties": {
    "effort": nullable({"enum": list(REASONING_EFFORTS)}),
    "summary": nullable({"enum": list(REASONING_SUMMARIES)}),
    "generate_summary": nullable({"enum": list(REASONING_SUMMARIES)})}})


def _conversation(value, param) -> str:
    """An id or `{"id": ...}`."""
    if isinstance(value, dict):
        value = value.get("id")
    if not isinstance(value, str) or not value:
        raise InvalidRequest("'conversation' must be a conversation id or {'id': ...}.",
                             param="conversation", code="invalid_type")
    return value


CONVERSATION_ID = {"type": "string", "minLength": 1}
CONVERSATION = Custom(_conversation, {"oneOf": [
    CONVERSATION_ID, {"type": "object", "required": ["id"], "additionalProperties": True,
                      "properties": {"id": CONVERSATION_ID}}]})


def parse_metadata(value, param: str = "metadata") -> dict:
    """`metadata` of a response or a conversation: at most 16 short string values."""
    if value is None:
        return {}
    if not isinstance(value, dict) or len(value) > METADATA_KEYS or not all(
        isinstance(k, str) and len(k) <= METADATA_KEY_LENGTH
        and isinstance(v, str) and len(v) <= METADATA_VALUE_LENGTH
        for k, v in value.items()
    ):
        raise InvalidRequest(f"'metadata' must be an object of at most {METADATA_KEYS} string "
                             f"values (keys up to {METADATA_KEY_LENGTH}, values up to "
                             f"{METADATA_VALUE_LENGTH} characters).",
                             param="metadata", code="invalid_value")
    return value


METADATA_SCHEMA = {
    "type": "object", "maxProperties": METADATA_KEYS,
    "propertyNames": {"maxLength": METADATA_KEY_LENGTH},
    "additionalProperties": {"type": "string", "maxLength": METADATA_VALUE_LENGTH},
}
METADATA = Custom(parse_metadata, ref("Metadata"))


def _include(value, param) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidRequest("'include' must be a list of strings.", param="include",
                             code="invalid_type")
    unknown = [v for v in value if v not in INCLUDABLE]
    if unknown:
        raise InvalidRequest(f"Invalid value for 'include': {unknown[0]!r}.", param="include",
                             code="invalid_value")
    return value


INCLUDE = Custom(_include, {"type": "array", "items": {"enum": list(INCLUDABLE)}})
