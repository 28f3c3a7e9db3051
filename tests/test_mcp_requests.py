"""The MCP parts of a request: the tool shape (credentials split off, never echoed), the
exact 400s, and the MCP input items normalized to the openai SDK's item shapes."""
import pytest
from openai.types.responses import ResponseInputItemParam, ResponseOutputItem
from pydantic import TypeAdapter

from responses_app.create.request import parse_create_request
from responses_app.errors import InvalidRequest
from responses_app.translation.chat_request import build_chat_request

OUTPUT_ITEM = TypeAdapter(ResponseOutputItem)
INPUT_ITEM = TypeAdapter(ResponseInputItemParam)


def parse(**fields):
    return parse_create_request({"model": "m", "input": "hi", **fields})


def test_the_tool_is_stored_without_its_credentials():
    request = parse(tools=[{"type": "mcp", "server_label": "docs",
                            "server_url": "https://mcp.example/mcp",
                            "headers": {"X-Key": "k"}, "authorization": "tok",
                            "allowed_tools": ["search"]}])
    assert request.params["tools"] == [{
        "type": "mcp", "server_label": "docs", "server_url": "https://mcp.example/mcp",
        "server_description": None, "allowed_tools": ["search"], "require_approval": "always"}]
    assert request.mcp_headers == {"docs": {"X-Key": "k", "Authorization": "Bearer tok"}}


@pytest.mark.parametrize("tool, param, code, message", [
    ({"server_url": "https://a.example/mcp"}, "tools[0].server_label", "invalid_value",
     "'tools[0].server_label' is required: 1-64 letters, digits, '_' or '-'."),
    ({"server_label": "a b", "server_url": "https://a.example/mcp"}, "tools[0].server_label",
     "invalid_value", "'tools[0].server_label' is required: 1-64 letters, digits, '_' or '-'."),
    ({"server_label": "a", "server_url": "file:///etc/passwd"}, "tools[0].server_url",
     "invalid_value", "'tools[0].server_url' is not allowed: only http and https URLs are "
                      "allowed."),
    ({"server_label": "a", "server_url": "http://169.254.169.254/"}, "tools[0].server_url",
     "invalid_value", "'tools[0].server_url' is not allowed: 169.254.169.254 is not a globally "
                      "routable address."),
    ({"server_label": "a", "server_url": "https://a.example", "allowed_tools": "all"},
     "tools[0].allowed_tools", "invalid_type",
     "'tools[0].allowed_tools' must be a list of tool names or an object with 'tool_names' "
     "and/or 'read_only'."),
    ({"server_label": "a", "server_url": "https://a.example", "require_approval": "sometimes"},
     "tools[0].require_approval", "invalid_value",
     "'tools[0].require_approval' must be 'always', 'never' or {'always': {...}, "
     "'never': {...}}."),
    ({"server_label": "a", "server_url": "https://a.example", "headers": {"X": 1}},
     "tools[0].headers", "invalid_type", "'tools[0].headers' must be an object of string values."),
    ({"server_label": "a", "connector_id": "connector_gmail"}, "tools[0].connector_id",
     "unsupported_parameter", "MCP connectors (`connector_id`) are not supported by this "
                              "gateway; use server_url."),
])
def test_bad_tools_are_400s(tool, param, code, message):
    with pytest.raises(InvalidRequest) as error:
        parse(tools=[{"type": "mcp", **tool}])
    assert (error.value.param, error.value.code, error.value.message) == (param, code, message)


def test_labels_are_unique_and_servers_capped(settings):
    settings.MCP_MAX_SERVERS_PER_REQUEST = 2
    tool = {"type": "mcp", "server_url": "https://a.example/mcp"}
    with pytest.raises(InvalidRequest, match="Each MCP tool needs its own 'server_label'."):
        parse(tools=[{**tool, "server_label": "a"}, {**tool, "server_label": "a"}])
    with pytest.raises(InvalidRequest, match="At most 2 MCP servers per request."):
        parse(tools=[{**tool, "server_label": label} for label in "abc"])


def test_request_urls_can_be_forbidden(settings):
    settings.MCP_ALLOW_REQUEST_URLS = False
    with pytest.raises(InvalidRequest) as error:
        parse(tools=[{"type": "mcp", "server_label": "a", "server_url": "https://a.example"}])
    assert error.value.code == "unsupported_parameter"
    registered = parse(tools=[{"type": "mcp", "server_label": "a"}])
    assert registered.params["tools"][0]["server_url"] is None


SDK_ITEMS = [
    {"type": "mcp_list_tools", "id": "mcpl_1", "server_label": "docs",
     "tools": [{"name": "search", "input_schema": {"type": "object"}}]},
    {"type": "mcp_approval_request", "id": "mcpr_1", "server_label": "docs", "name": "search",
     "arguments": '{"q": "x"}'},
    {"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": True},
    {"type": "mcp_call", "id": "mcp_1", "server_label": "docs", "name": "search",
     "arguments": '{"q": "x"}', "output": "found", "approval_request_id": "mcpr_1"},
]


def test_mcp_input_items_are_the_sdk_shapes_and_reach_the_model_as_a_tool_turn():
    for item in SDK_ITEMS:
        INPUT_ITEM.validate_python(item)
    items = parse(input=[{"role": "user", "content": "find x"}, *SDK_ITEMS]).input_items
    for item in items[1:]:
        OUTPUT_ITEM.validate_python(item)
    assert items[3]["id"].startswith("mcpa_")
    chat = build_chat_request(model="m", instructions=None, items=items, params={}, include=[],
                              max_tokens_param="max_tokens")
    assert chat.body["messages"] == [
        {"role": "user", "content": "find x"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "mcp_1", "type": "function",
             "function": {"name": "docs__search", "arguments": '{"q": "x"}'}}]},
        {"role": "tool", "tool_call_id": "mcp_1", "content": "found"}]


def test_bad_approval_response_is_a_400():
    with pytest.raises(InvalidRequest) as error:
        parse(input=[{"type": "mcp_approval_response", "approval_request_id": "mcpr_1",
                      "approve": "yes"}])
    assert (error.value.param, error.value.code) == ("input[0].approve", "invalid_value")
