"""The tool search the gateway runs (`{"type": "tool_search"}`), end to end on the shared
production deployment: a 100-tool MCP server and functions marked `defer_loading` reach the
model only after its search found them (the exact `tools` of every upstream request), the
exact events streamed, the output not streamed, a chain continuing with the found tools
loaded, and over a WebSocket. The model is the fake upstream's `fake-sequential-caller`
(one `call NAME ARGS` line of the user's message per turn)."""
import json

import pytest

from responses_app.context.compaction_items import COMPACTION_PREFIX
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


def stored_mcp(server, found):
    """The request's MCP tool as stored, holding the tools a search found."""
    return {"type": "mcp", "server_label": "big", "server_url": server.url,
            "server_description": None, "allowed_tools": found, "require_approval": "never",
            "defer_loading": True}


def search_turn_messages(call, said, text) -> list[dict]:
    """The search as the model is shown it on the next turn: its call, what it was told."""
    return [{"role": "assistant", "content": said, "tool_calls": [
                {"id": call["id"], "type": "function", "function": {
                    "name": "tool_search", "arguments": json.dumps(call["arguments"])}}]},
            {"role": "tool", "tool_call_id": call["id"], "content": text}]


FOUND = ["get_weather_forecast", "list_weather_forecast", "create_weather_forecast",
         "delete_weather_forecast", "get_invoice"]  # best first: BM25, then listing order
LOADED_TEXT = ("Tools loaded, callable from now on: big__get_weather_forecast, "
               "big__list_weather_forecast, big__create_weather_forecast, "
               "big__delete_weather_forecast, big__get_invoice.")
OFFERED = ["big__get_invoice", "big__get_weather_forecast", "big__list_weather_forecast",
           "big__create_weather_forecast", "big__delete_weather_forecast"]  # listing order


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
    listing, said, call, output, said_again, mcp_call, answer = final["output"]
    assert len(listing["tools"]) == 100
    assert call == {"id": call["id"], "type": "tool_search_call", "call_id": None,
                    "execution": "server", "arguments": {"query": "get the weather forecast"},
                    "status": "completed"}
    assert output == {"id": output["id"], "type": "tool_search_output", "call_id": None,
                      "execution": "server", "tools": [stored_mcp(big, FOUND)],
                      "status": "completed"}
    added = [e["item"] for e in events if e["type"] == "response.output_item.added"]
    assert added[3] == {**output, "tools": [], "status": "in_progress"}
    assert (mcp_call["name"], mcp_call["output"]) == ("get_weather_forecast",
                                                      "get_weather_forecast: paris")
    assert answer["content"][0]["text"] == f"Results: {LOADED_TEXT} | get_weather_forecast: paris"
    # none of the 100 tools before the search; the 5 found after it, and only them
    first, second, third = clean_upstream.requests()
    assert [tool_names(r) for r in (first, second, third)] == [
        ["tool_search", "note"], ["tool_search", "note", *OFFERED],
        ["tool_search", "note", *OFFERED]]
    assert second["body"]["messages"][1:] == search_turn_messages(
        call, "Calling tool_search.", LOADED_TEXT)
    assert third["body"]["messages"][1:] == [
        *search_turn_messages(call, "Calling tool_search.", LOADED_TEXT),
        {"role": "assistant", "content": "Calling big__get_weather_forecast.", "tool_calls": [
            {"id": mcp_call["id"], "type": "function", "function": {
                "name": "big__get_weather_forecast", "arguments": '{"id": "paris"}'}}]},
        {"role": "tool", "tool_call_id": mcp_call["id"], "content": "get_weather_forecast: paris"}]
    assert api.get(f"/responses/{final['id']}").json() == final


LOOKUP = {"type": "function", "name": "lookup_order", "description": "Find an order by its id.",
          "parameters": {"type": "object", "properties": {"id": {"type": "string"}}},
          "strict": False, "defer_loading": True}
REFUND = {"type": "function", "name": "refund_order", "description": "Refund an order.",
          "parameters": {"type": "object", "properties": {"id": {"type": "string"}}},
          "strict": False, "defer_loading": True}
CUSTOMERS = {"type": "function", "name": "list_customers", "description": "List the customers.",
             "parameters": {"type": "object", "properties": {}}, "strict": False,
             "defer_loading": True}
CRM = {"type": "namespace", "name": "crm", "description": "CRM tools.",
       "tools": [REFUND, CUSTOMERS]}


def test_deferred_functions_found_then_called_not_streamed_and_kept_in_a_chain(
        openai_client, clean_upstream):
    tools = [{"type": "tool_search"}, LOOKUP, CRM, NOTE]
    first = openai_client.responses.create(
        model="fake-sequential-caller", tools=tools,
        input='call tool_search {"query": "refund an order"}\ncall crm__refund_order {"id": "o1"}')
    body = first.model_dump(mode="json", exclude_unset=True)
    validate_response(body)
    said, call, output, said_again, function_call = body["output"]
    assert (call["execution"], call["call_id"], call["arguments"]) == (
        "server", None, {"query": "refund an order"})
    # the best match first: the namespace holding it, as the request gave it
    assert output["tools"] == [{**CRM, "tools": [REFUND]}, LOOKUP]
    assert (function_call["type"], function_call["namespace"], function_call["name"],
            function_call["arguments"]) == ("function_call", "crm", "refund_order", '{"id": "o1"}')
    loaded_text = "Tools loaded, callable from now on: crm__refund_order, lookup_order."
    assert [tool_names(r) for r in clean_upstream.requests()] == [
        ["tool_search", "note"], ["tool_search", "note", "crm__refund_order", "lookup_order"]]

    second = openai_client.responses.create(
        model="fake-sequential-caller", tools=tools, previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": function_call["call_id"],
                "output": "refunded"}])
    assert second.output_text == f"Results: {loaded_text} | refunded"
    last = clean_upstream.requests()[-1]["body"]
    assert [t["function"]["name"] for t in last["tools"]] == [
        "tool_search", "note", "crm__refund_order", "lookup_order"]
    assert last["messages"][1:] == [
        *search_turn_messages(call, "Calling tool_search.", loaded_text),
        {"role": "assistant", "content": "Calling crm__refund_order.", "tool_calls": [
            {"id": function_call["call_id"], "type": "function", "function": {
                "name": "crm__refund_order", "arguments": '{"id": "o1"}'}}]},
        {"role": "tool", "tool_call_id": function_call["call_id"], "content": "refunded"}]


def test_found_mcp_tools_stay_loaded_over_a_websocket_chain(production, tenant_key, big,
                                                             clean_upstream):
    from tests.websocket_client import checked_turn, open_socket

    tools = [{"type": "tool_search"}, deferred_mcp(big)]
    with open_socket(production, tenant_key) as ws:
        events, first = checked_turn(ws, model="fake-sequential-caller", store=False,
                                     tools=tools, input=WEATHER_PROMPT)
        later, second = checked_turn(ws, model="fake-sequential-caller", store=False,
                                     tools=tools, previous_response_id=first["id"],
                                     input='call big__list_weather_forecast {"id": "oslo"}')
    assert [e["type"] for e in events] == [*START, *LIST, *SAID, *SEARCH, *SAID, *MCP_CALL,
                                           *ANSWER, "response.completed"]
    # the continuation reuses the listing and the search's output: no new search, no listing
    assert [e["type"] for e in later] == [*START, *SAID, *MCP_CALL, *ANSWER,
                                          "response.completed"]
    assert [i["type"] for i in second["output"]] == ["message", "mcp_call", "message"]
    assert second["output"][2]["content"][0]["text"] == "Results: list_weather_forecast: oslo"
    assert [tool_names(r) for r in clean_upstream.requests()] == [
        ["tool_search"], ["tool_search", *OFFERED], ["tool_search", *OFFERED],
        ["tool_search", *OFFERED], ["tool_search", *OFFERED]]


def chat_requests(upstream) -> list[dict]:
    return [r["body"] for r in upstream.requests() if r["path"] == "/v1/chat/completions"]


def loaded_by_a_search(api, tools) -> tuple[dict, dict]:
    """A response whose search loaded crm__refund_order and lookup_order (the response,
    its tool_search_call)."""
    first = api.post("/responses", json={"model": "fake-sequential-caller", "tools": tools,
                                         "input": 'call tool_search {"query": "refund an order"}'})
    assert first.status_code == 200, first.text
    said, call, output, answer = first.json()["output"]
    assert output["tools"] == [{**CRM, "tools": [REFUND]}, LOOKUP]
    return first.json(), call


LOADED = ["tool_search", "note", "crm__refund_order", "lookup_order"]
LOADED_TEXT_CRM = "Tools loaded, callable from now on: crm__refund_order, lookup_order."
SUMMARY = {"role": "system", "content": COMPACTION_PREFIX + "Results:"}  # the model's summary


def test_tools_a_search_loaded_stay_loaded_after_a_server_side_compaction(api, clean_upstream):
    tools = [{"type": "tool_search"}, LOOKUP, CRM, NOTE]
    first, call = loaded_by_a_search(api, tools)
    clean_upstream.clear()
    second = api.post("/responses", json={
        "model": "fake-sequential-caller", "tools": tools, "previous_response_id": first["id"],
        "context_management": [{"type": "compaction", "compact_threshold": 1}],
        "input": 'call lookup_order {"id": "o2"}'}).json()
    compaction, said, function_call = second["output"]
    assert (compaction["type"], function_call["name"]) == ("compaction", "lookup_order")
    summary, reply = chat_requests(clean_upstream)
    assert (summary["stream"], [t["function"]["name"] for t in reply["tools"]]) == (True, LOADED)
    # the search the compaction carries, right after its summary
    assert reply["messages"] == [
        SUMMARY, *search_turn_messages(call, None, LOADED_TEXT_CRM),  # its text summarized
        {"role": "user", "content": 'call lookup_order {"id": "o2"}'}]
    # the chain is read from the compaction on: still loaded on the next turn
    clean_upstream.clear()
    third = api.post("/responses", json={
        "model": "fake-sequential-caller", "tools": tools, "previous_response_id": second["id"],
        "input": [{"type": "function_call_output", "call_id": function_call["call_id"],
                   "output": "found"}]}).json()
    assert third["output"][0]["content"][0]["text"] == "Results: found"
    [reply] = chat_requests(clean_upstream)
    assert [t["function"]["name"] for t in reply["tools"]] == LOADED


def test_tools_a_search_loaded_stay_loaded_after_the_compact_endpoint(api, clean_upstream):
    tools = [{"type": "tool_search"}, LOOKUP, CRM, NOTE]
    first, call = loaded_by_a_search(api, tools)
    compacted = api.post("/responses/compact", json={
        "model": "fake-sequential-caller", "previous_response_id": first["id"]}).json()
    assert [i["type"] for i in compacted["output"]] == ["message", "compaction"]
    clean_upstream.clear()
    # the compacted window sent back alone, as OpenAI allows (nothing before the compaction)
    reply = api.post("/responses", json={
        "model": "fake-sequential-caller", "tools": tools, "store": False,
        "input": [compacted["output"][-1], {"role": "user", "content": 'call note {}'}]})
    assert reply.json()["output"][1]["name"] == "note"
    [chat] = chat_requests(clean_upstream)
    assert [t["function"]["name"] for t in chat["tools"]] == LOADED
    assert chat["messages"] == [
        SUMMARY, *search_turn_messages(call, None, LOADED_TEXT_CRM),  # its text summarized
        {"role": "user", "content": "call note {}"}]


@pytest.mark.parametrize("tools, param, code, message", [
    ([{"type": "tool_search", "execution": "elsewhere"}], "tools[0].execution", "invalid_value",
     "Invalid value for 'tools[0].execution': 'elsewhere'; must be one of ['server', "
     "'client']."),
    ([{"type": "tool_search"}, {**NOTE, "defer_loading": "yes"}], "tools[1].defer_loading",
     "invalid_type", "'tools[1].defer_loading' must be a boolean."),
    ([{"type": "tool_search"}, {"type": "mcp", "server_label": "big",
                                "server_url": "http://127.0.0.1:1/mcp", "defer_loading": 1}],
     "tools[1].defer_loading", "invalid_type", "'tools[1].defer_loading' must be a boolean."),
    ([LOOKUP], "tools", "invalid_value", "Tools marked 'defer_loading' are offered once a tool "
                                         "search finds them: add a {'type': 'tool_search'} tool."),
])
def test_bad_tool_search_input_is_a_400(api, tools, param, code, message):
    response = api.post("/responses", json={"model": "fake-sequential-caller", "input": "hi",
                                            "tools": tools})
    assert (response.status_code, response.json()) == (400, {"error": {
        "message": message, "type": "invalid_request_error", "param": param, "code": code}})
