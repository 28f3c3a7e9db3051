"""MCP tools run by the gateway, end to end on the production path (Daphne + Celery +
Redis + Postgres) against real MCP servers (the `mcp` package) on 127.0.0.1, with the fake
upstream scripting the model's tool calls (`fake-tool-caller`). Every stream goes through
the SSE framing check, both schema oracles and the invariant checker."""
import json

import pytest

from tests.mcp_server import McpTestServer
from tests.oracles import check_sse_stream, validate_response

LIST = ["response.output_item.added", "response.mcp_list_tools.in_progress",
        "response.mcp_list_tools.completed", "response.output_item.done"]
START = ["response.created", "response.in_progress"]


def call_events(deltas: int = 2, outcome: str = "completed") -> list[str]:
    return ["response.output_item.added", "response.mcp_call.in_progress",
            *["response.mcp_call_arguments.delta"] * deltas, "response.mcp_call_arguments.done",
            f"response.mcp_call.{outcome}", "response.output_item.done"]


TEXT = ["response.output_item.added", "response.content_part.added",
        *["response.output_text.delta"] * 2, "response.output_text.done",
        "response.content_part.done", "response.output_item.done"]


@pytest.fixture(scope="module")
def demo():
    server = McpTestServer("demo").start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def other():
    server = McpTestServer("other").start()
    yield server
    server.stop()


def mcp_tool(server, label="demo", **extra):
    return {"type": "mcp", "server_label": label, "server_url": server.url,
            "require_approval": "never", **extra}


def stream(api, body) -> tuple[list[dict], dict]:
    with api.stream("POST", "/responses", json={**body, "stream": True}) as response:
        raw = response.read()
    assert response.status_code == 200, raw
    return check_sse_stream(raw)


def types(events):
    return [e["type"] for e in events]


def test_list_call_result_final_text_streamed(api, demo, clean_upstream):
    events, final = stream(api, {"model": "fake-tool-caller", "tools": [mcp_tool(demo)],
                                 "input": 'call demo__echo {"text": "hi"}'})
    assert types(events) == [*START, *LIST, *call_events(), *TEXT, "response.completed"]
    listing, call, message = final["output"]
    assert [t["name"] for t in listing["tools"]] == ["echo", "sum", "sleep", "raise", "large"]
    assert listing["server_label"] == "demo"
    assert (call["type"], call["name"], call["server_label"], call["arguments"], call["output"],
            call["error"], call["status"]) == (
        "mcp_call", "echo", "demo", '{"text": "hi"}', "echo: hi", None, "completed")
    assert message["content"][0]["text"] == "Results: echo: hi"
    # the model saw the MCP tools as functions and the call and its result as a tool turn
    first, second = [r["body"] for r in clean_upstream.requests()]
    assert [t["function"]["name"] for t in first["tools"]] == [
        "demo__echo", "demo__sum", "demo__sleep", "demo__raise", "demo__large"]
    assert second["messages"][1:] == [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": call["id"], "type": "function",
             "function": {"name": "demo__echo", "arguments": '{"text": "hi"}'}}]},
        {"role": "tool", "tool_call_id": call["id"], "content": "echo: hi"}]
    assert api.get(f"/responses/{final['id']}").json() == final
    assert "headers" not in json.dumps(final["tools"])


def test_list_call_result_final_text_not_streamed(api, demo):
    response = api.post("/responses", json={
        "model": "fake-tool-caller", "tools": [mcp_tool(demo)],
        "input": 'call demo__sum {"a": 2, "b": 40}'})
    assert response.status_code == 200
    body = response.json()
    validate_response(body)
    assert [i["type"] for i in body["output"]] == ["mcp_list_tools", "mcp_call", "message"]
    assert body["output"][1]["output"] == "42"
    assert body["output"][2]["content"][0]["text"] == "Results: 42"
