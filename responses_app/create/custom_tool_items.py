"""Custom (freeform) tools in a create body: the tool definition and the two input items,
`custom_tool_call` and `custom_tool_call_output`, in their stored shapes.

A custom tool is `{"type": "custom", "name", "description", "format"}`, `format` being
`{"type": "text"}` or `{"type": "grammar", "syntax": "lark" | "regex", "definition"}`
(the OpenAI SDK's CustomTool). How it reaches the upstream is translation.custom_tools'.
"""
from .fields import required_name, required_string
from ..errors import InvalidRequest
from ..ids import item_id
from .tool_output_parts import tool_output

GRAMMAR_SYNTAXES = ("lark", "regex")
CUSTOM_TOOL_SCHEMA = {
    "type": "object", "required": ["type", "name"], "additionalProperties": True,
    "properties": {
        "type": {"const": "custom"}, "name": {"type": "string"},
        "description": {"type": ["string", "null"]},
        "format": {"oneOf": [
            {"type": "object", "required": ["type"], "additionalProperties": False,
             "properties": {"type": {"const": "text"}}},
            {"type": "object", "required": ["type", "syntax", "definition"],
             "additionalProperties": False,
             "properties": {"type": {"const": "grammar"},
                            "syntax": {"enum": list(GRAMMAR_SYNTAXES)},
                            "definition": {"type": "string"}}},
        ]},
    },
}


def custom_tool(tool: dict, param: str) -> dict:
    """A custom tool as stored and echoed: name, description and format (text by default)."""
    name = required_name(tool, "name", param)
    description = tool.get("description")
    if description is not None and not isinstance(description, str):
        raise InvalidRequest(f"'{param}.description' must be a string.",
                             param=f"{param}.description", code="invalid_type")
    stored = {"type": "custom", "name": name, "description": description,
              "format": _format(tool.get("format"), f"{param}.format")}
    if tool.get("defer_loading"):  # offered once a tool search loads it
        stored["defer_loading"] = True
    return stored


def _format(fmt, param) -> dict:
    if fmt is None:
        return {"type": "text"}
    if not isinstance(fmt, dict) or fmt.get("type") not in ("text", "grammar"):
        raise InvalidRequest(f"Invalid value for '{param}': the format of a custom tool is "
                             f"{{'type': 'text'}} or {{'type': 'grammar', 'syntax', "
                             f"'definition'}}.", param=param, code="invalid_value")
    if fmt["type"] == "text":
        return {"type": "text"}
    syntax = fmt.get("syntax")
    if syntax not in GRAMMAR_SYNTAXES:
        raise InvalidRequest(f"Invalid value for '{param}.syntax': must be one of "
                             f"{list(GRAMMAR_SYNTAXES)}.", param=f"{param}.syntax",
                             code="invalid_value")
    return {"type": "grammar", "syntax": syntax,
            "definition": required_string(fmt, "definition", param)}


def _custom_tool_call(item, param) -> dict:
    call = {"id": item_id(item, "ctc"), "type": "custom_tool_call",
            "call_id": required_string(item, "call_id", param),
            "name": required_string(item, "name", param),
            "input": required_string(item, "input", param), "status": "completed"}
    if isinstance(item.get("namespace"), str) and item["namespace"]:
        call["namespace"] = item["namespace"]
    return call


def _custom_tool_call_output(item, param) -> dict:
    output = tool_output(item.get("output"), f"{param}.output")
    return {"id": item_id(item, "ctco"), "type": "custom_tool_call_output",
            "call_id": required_string(item, "call_id", param), "output": output,
            "status": "completed"}



CUSTOM_ITEM_BUILDERS = {
    "custom_tool_call": _custom_tool_call,
    "custom_tool_call_output": _custom_tool_call_output,
}
