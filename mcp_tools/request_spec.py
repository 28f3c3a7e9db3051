"""Validation of the MCP parts of a `POST /v1/responses` body (no database here).

`mcp_tool()` checks one `{"type": "mcp", ...}` tool and splits off its `headers` (and
`authorization`), which are used for that request only and never stored. The builders in
`MCP_ITEM_BUILDERS` normalize the MCP input items the openai SDK sends back.
"""
import re

from django.conf import settings

from responses_app.create.fields import defer_loading
from responses_app.errors import InvalidRequest
from responses_app.ids import new_id

from .egress import EgressRefused, check_literal_url, parse_allowlist

LABEL = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
APPROVAL_MODES = ("always", "never")


def mcp_tool(tool: dict, param: str) -> tuple[dict, dict | None]:
    """The tool as stored and echoed (no credentials), and its request-only headers."""
    label = tool.get("server_label")
    if not isinstance(label, str) or not LABEL.match(label):
        raise InvalidRequest(f"'{param}.server_label' is required: 1-64 letters, digits, '_' "
                             f"or '-'.", param=f"{param}.server_label", code="invalid_value")
    if tool.get("connector_id") is not None:
        raise InvalidRequest("MCP connectors (`connector_id`) are not supported by this "
                             "gateway; use server_url.", param=f"{param}.connector_id",
                             code="unsupported_parameter")
    url = tool.get("server_url")
    if url is not None:
        url = _server_url(url, f"{param}.server_url")
    description = tool.get("server_description")
    if description is not None and not isinstance(description, str):
        raise InvalidRequest(f"'{param}.server_description' must be a string.",
                             param=f"{param}.server_description", code="invalid_type")
    stored = {"type": "mcp", "server_label": label, "server_url": url,
              "server_description": description,
              "allowed_tools": _allowed_tools(tool.get("allowed_tools"), f"{param}.allowed_tools"),
              "require_approval": _require_approval(tool.get("require_approval"),
                                                    f"{param}.require_approval")}
    if defer_loading(tool, param):  # its tools are offered once a tool search finds them
        stored["defer_loading"] = True
    return stored, _headers(tool, param)


def check_mcp_tool_count(tools: list[dict]) -> None:
    labels = [t["server_label"] for t in tools if t["type"] == "mcp"]
    if len(labels) != len(set(labels)):
        raise InvalidRequest("Each MCP tool needs its own 'server_label'.", param="tools",
                             code="invalid_value")
    if len(labels) > settings.MCP_MAX_SERVERS_PER_REQUEST:
        raise InvalidRequest(f"At most {settings.MCP_MAX_SERVERS_PER_REQUEST} MCP servers per "
                             f"request.", param="tools", code="invalid_value")


def _server_url(url, param) -> str:
    if not isinstance(url, str):
        raise InvalidRequest(f"'{param}' must be a string.", param=param, code="invalid_type")
    if not settings.MCP_ALLOW_REQUEST_URLS:
        raise InvalidRequest("This gateway only runs MCP servers an administrator registered: "
                             "name one by 'server_label' alone.", param=param,
                             code="unsupported_parameter")
    try:
        check_literal_url(url, parse_allowlist(settings.MCP_EGRESS_ALLOWLIST))
    except EgressRefused as refused:
        raise InvalidRequest(f"'{param}' is not allowed: {refused}.", param=param,
                             code="invalid_value") from None
    return url


def _headers(tool, param) -> dict | None:
    headers = tool.get("headers")
    if headers is not None and not (isinstance(headers, dict) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in headers.items())):
        raise InvalidRequest(f"'{param}.headers' must be an object of string values.",
                             param=f"{param}.headers", code="invalid_type")
    headers = dict(headers or {})
    authorization = tool.get("authorization")
    if authorization is not None:
        if not isinstance(authorization, str):
            raise InvalidRequest(f"'{param}.authorization' must be a string.",
                                 param=f"{param}.authorization", code="invalid_type")
        headers["Authorization"] = f"Bearer {authorization}"
    return headers or None


def _filter(value, param) -> dict:
    """`{tool_names, read_only}`; a bare list means tool_names."""
    if isinstance(value, list):
        value = {"tool_names": value}
    if not isinstance(value, dict):
        raise InvalidRequest(f"'{param}' must be a list of tool names or an object with "
                             f"'tool_names' and/or 'read_only'.", param=param,
                             code="invalid_type")
    names = value.get("tool_names")
    if names is not None and not (isinstance(names, list)
                                  and all(isinstance(n, str) for n in names)):
        raise InvalidRequest(f"'{param}.tool_names' must be a list of strings.",
                             param=f"{param}.tool_names", code="invalid_type")
    read_only = value.get("read_only")
    if read_only is not None and not isinstance(read_only, bool):
        raise InvalidRequest(f"'{param}.read_only' must be a boolean.",
                             param=f"{param}.read_only", code="invalid_type")
    result = {}
    if names is not None:
        result["tool_names"] = names
    if read_only is not None:
        result["read_only"] = read_only
    return result


def _allowed_tools(value, param):
    if value is None:
        return None
    if isinstance(value, list):
        return _filter(value, param)["tool_names"]
    return _filter(value, param)


def _require_approval(value, param):
    if value is None:
        return "always"
    if value in APPROVAL_MODES:
        return value
    if isinstance(value, dict) and set(value) <= {"always", "never"}:
        return {mode: _filter(value[mode], f"{param}.{mode}") for mode in value
                if value[mode] is not None}
    raise InvalidRequest(f"'{param}' must be 'always', 'never' or "
                         f"{{'always': {{...}}, 'never': {{...}}}}.", param=param,
                         code="invalid_value")


# --- input items -----------------------------------------------------------------------------

def _string(item, name, param, required=True) -> str | None:
    value = item.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise InvalidRequest(f"Missing or invalid '{param}.{name}': must be a string.",
                             param=f"{param}.{name}", code="invalid_value")
    return value


def _id(item, prefix) -> str:
    value = item.get("id")
    return value if isinstance(value, str) and value else new_id(prefix)


def _approval_response(item, param) -> dict:
    approve = item.get("approve")
    if not isinstance(approve, bool):
        raise InvalidRequest(f"Missing or invalid '{param}.approve': must be a boolean.",
                             param=f"{param}.approve", code="invalid_value")
    return {"id": _id(item, "mcpa"), "type": "mcp_approval_response",
            "approval_request_id": _string(item, "approval_request_id", param),
            "approve": approve, "reason": _string(item, "reason", param, required=False)}


def _approval_request(item, param) -> dict:
    return {"id": _string(item, "id", param), "type": "mcp_approval_request",
            "server_label": _string(item, "server_label", param),
            "name": _string(item, "name", param),
            "arguments": _string(item, "arguments", param)}


def _list_tools(item, param) -> dict:
    tools = item.get("tools")
    if not isinstance(tools, list) or not all(
            isinstance(t, dict) and isinstance(t.get("name"), str) for t in tools):
        raise InvalidRequest(f"'{param}.tools' must be a list of tools with names.",
                             param=f"{param}.tools", code="invalid_type")
    result = {"id": _id(item, "mcpl"), "type": "mcp_list_tools",
              "server_label": _string(item, "server_label", param),
              "tools": [{"name": t["name"], "input_schema": t.get("input_schema") or {},
                         "annotations": t.get("annotations"),
                         "description": t.get("description")} for t in tools]}
    if item.get("error") is not None:
        result["error"] = _string(item, "error", param)
    return result


def _call(item, param) -> dict:
    error = item.get("error")
    if error is not None and not isinstance(error, dict | str):
        raise InvalidRequest(f"'{param}.error' must be an object.", param=f"{param}.error",
                             code="invalid_type")
    status = item.get("status") or ("failed" if error is not None else "completed")
    return {"id": _id(item, "mcp"), "type": "mcp_call",
            "status": status, "server_label": _string(item, "server_label", param),
            "name": _string(item, "name", param),
            "arguments": _string(item, "arguments", param),
            "approval_request_id": _string(item, "approval_request_id", param, required=False),
            "output": _string(item, "output", param, required=False), "error": error}


MCP_ITEM_BUILDERS = {
    "mcp_approval_response": _approval_response,
    "mcp_approval_request": _approval_request,
    "mcp_list_tools": _list_tools,
    "mcp_call": _call,
}
