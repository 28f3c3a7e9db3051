"""The tool search the gateway runs (`{"type": "tool_search"}`), end to end on the shared
production deployment: a 100-tool MCP server and functions marked `defer_loading` reach the
model only after its search found them (the exact `tools` of every upstream request), the
exact events streamed, the output not streamed, a chain continuing with the found tools
loaded, and over a WebSocket. The model is the fake upstream's `fake-sequential-caller`
(one `call NAME ARGS` line of the user's message per turn)."""
import json

import pytest

from tests.mcp_server import McpTestServer
from tests.oracles import check_sse_stream, validate_response

START = ["response.created", "response.in_progress"]
LIST = ["response.output_item.added", "response.mcp_list_tools.in_progress",
        "response.mcp_list_tools.completed", "response.output_item.done"]
SAID = ["response.output_item.added", "response.content_part.added",
        "response.output_text.delta", "response.output_text.done",
        "response.content_part.done", "response.output_item.done"]
ANSWER = ["response.output_item.added", "response.content_part.added",
          *["response.output_text.delta"] * 2, "response.output_text.done",
          "response.content_part.done", "response.output_item.done"]
SEARCH = ["response.output_item.added", "response.output_item.done",  # tool_search_call
          "response.output_item.added", "response.output_item.done"]  # tool_search_output
MCP_CALL = ["response.output_item.added", "response.mcp_call.in_progress",
            *["response.mcp_call_arguments.delta"] * 2, "response.mcp_call_arguments.done",
            "response.mcp_call.completed", "response.output_item.done"]
NOTE = {"type": "function", "name": "note", "description": "Write a note.",
        "parameters": {"type": "object", "properties": {"text": {"type": "string"}}},
        "strict": False}
WEATHER = ["big__get_weather_forecast", "big__list_weather_forecast",
           "big__create_weather_forecast", "big__delete_weather_forecast", "big__get_invoice"]
WEATHER_PROMPT = ('call tool_search {"query": "get the weather forecast"}\n'
                  'call big__get_weather_forecast {"id": "paris"}')


@pytest.fixture(scope="module")
def big():
    server = McpTestServer("big", catalog=True).start()
    yield server
    server.stop()


def deferred_mcp(server):
    return {"type": "mcp", "server_label": "big", "server_url": server.url,
            "require_approval": "never", "defer_loading": True}


def tool_names(request) -> list[str]:
    return [t["function"]["name"] for t in request["body"].get("tools") or ()]


def test_a_deferred_mcp_server_reaches_the_model_only_after_a_search_streamed(
        api, big, clean_upstream):
    body = {"model": "fake-sequential-caller", "stream": True, "input": WEATHER_PROMPT,
            "tools": [{"type": "tool_search"}, deferred_mcp(big), NOTE]}
    with api.stream("POST", "/responses", json=body) as response:
        raw = response.read()
    assert response.status_code == 200, raw
    events, final = check_sse_stream(raw)
    assert [e["type"] for e in events] == [*START, *LIST, *SAID, *SEARCH, *SAID, *MCP_CALL,
                                           *ANSWER, "response.completed"]
    print(json.dumps(final["output"][1:], indent=1))
    for r in clean_upstream.requests():
        print(tool_names(r), json.dumps(r["body"]["messages"][1:]))
