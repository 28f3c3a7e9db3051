"""MCP tools run by the gateway, end to end on the production path (Daphne + Celery +
Redis + Postgres) against real MCP servers (the `mcp` package) on 127.0.0.1, with the fake
upstream scripting the model's tool calls (`fake-tool-caller`). Every stream goes through
the SSE framing check, both schema oracles and the invariant checker."""
import json
import time

import httpx
import pytest

from tests.mcp_server import McpTestServer
from tests.oracles import check_sse_stream, validate_response
from tests.servers import Deployment

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


def test_approval_request_ends_the_response_then_approve_runs_the_call(api, demo):
    tool = mcp_tool(demo, require_approval={"never": {"tool_names": ["echo"]}})
    events, first = stream(api, {"model": "fake-tool-caller", "tools": [tool],
                                 "input": 'call demo__sum {"a": 1, "b": 2}'})
    assert types(events) == [*START, *LIST, "response.output_item.added",
                             "response.output_item.done", "response.completed"]
    request = first["output"][1]
    assert (request["type"], request["name"], request["arguments"]) == (
        "mcp_approval_request", "sum", '{"a": 1, "b": 2}')
    approve = {"type": "mcp_approval_response", "approval_request_id": request["id"],
               "approve": True}
    events, second = stream(api, {"model": "fake-tool-caller", "tools": [tool],
                                  "previous_response_id": first["id"], "input": [approve]})
    # the listing is reused from the chain; the approved call runs first, then the model
    assert types(events) == [*START, *call_events(deltas=1), *TEXT, "response.completed"]
    call = second["output"][0]
    assert (call["approval_request_id"], call["output"]) == (request["id"], "3")
    assert second["output"][1]["content"][0]["text"] == "Results: 3"
    # replaying the approval, on the same chain or on a fork, is refused
    for previous in (second["id"], first["id"]):
        replay = api.post("/responses", json={"model": "fake-tool-caller", "tools": [tool],
                                              "previous_response_id": previous,
                                              "input": [approve]})
        assert replay.status_code == 400
        assert replay.json()["error"]["message"] == (
            f"The approval request '{request['id']}' was already answered.")


def test_an_approval_request_a_compaction_carries_is_approved_after_it(api, demo):
    """Compacted while an approval request waits: the answer sent after the compaction
    item alone finds the request (the compaction carries it), and the call runs."""
    tool = mcp_tool(demo, require_approval="always")
    _, first = stream(api, {"model": "fake-tool-caller", "tools": [tool],
                            "input": 'call demo__sum {"a": 1, "b": 2}'})
    request = first["output"][1]
    compacted = api.post("/responses/compact", json={
        "model": "fake-tool-caller", "previous_response_id": first["id"]}).json()
    assert [i["type"] for i in compacted["output"]] == ["message", "compaction"]
    events, second = stream(api, {"model": "fake-tool-caller", "tools": [tool], "input": [
        compacted["output"][-1],
        {"type": "mcp_approval_response", "approval_request_id": request["id"],
         "approve": True}]})
    # listed again (the listing is summarized), the approved call, then the model
    assert types(events) == [*START, *LIST, *call_events(deltas=1), *TEXT,
                             "response.completed"]
    call = second["output"][1]
    assert (call["approval_request_id"], call["output"]) == (request["id"], "3")
    assert second["output"][2]["content"][0]["text"] == "Results: 3"


def test_denied_approval_tells_the_model_and_runs_nothing(api, demo):
    tool = mcp_tool(demo, require_approval="always")
    calls_before = demo.stats["calls"]
    _, first = stream(api, {"model": "fake-tool-caller", "tools": [tool],
                            "input": 'call demo__echo {"text": "no"}'})
    request = first["output"][1]
    events, second = stream(api, {"model": "fake-tool-caller", "tools": [tool],
                                  "previous_response_id": first["id"],
                                  "input": [{"type": "mcp_approval_response", "approve": False,
                                             "approval_request_id": request["id"],
                                             "reason": "not now"}]})
    assert types(events) == [*START, *TEXT, "response.completed"]
    assert second["output"][0]["content"][0]["text"] == (
        "Results: The user denied this tool call. not now")
    assert demo.stats["calls"] == calls_before


def test_approving_an_id_from_another_chain_is_refused(api, demo):
    tool = mcp_tool(demo, require_approval="always")
    _, elsewhere = stream(api, {"model": "fake-tool-caller", "tools": [tool],
                                "input": 'call demo__echo {"text": "a"}'})
    _, here = stream(api, {"model": "fake-text", "input": "hi"})
    response = api.post("/responses", json={
        "model": "fake-tool-caller", "tools": [tool], "previous_response_id": here["id"],
        "input": [{"type": "mcp_approval_response", "approve": True,
                   "approval_request_id": elsewhere["output"][1]["id"]}]})
    assert response.status_code == 400
    assert response.json()["error"] == {
        "message": f"No MCP approval request '{elsewhere['output'][1]['id']}' in this "
                   f"conversation.",
        "type": "invalid_request_error", "param": "input[0].approval_request_id",
        "code": "invalid_value"}


def test_allowed_tools_is_a_hard_limit(api, demo, clean_upstream):
    tool = mcp_tool(demo, allowed_tools={"tool_names": ["echo", "sum", "sleep"], "read_only": True})
    events, final = stream(api, {"model": "fake-tool-caller", "tools": [tool],
                                 "input": 'call demo__sleep {"seconds": 0}'})
    listing = final["output"][0]
    assert [t["name"] for t in listing["tools"]] == ["echo", "sum"]
    offered = clean_upstream.requests()[0]["body"]["tools"]
    assert [t["function"]["name"] for t in offered] == ["demo__echo", "demo__sum"]
    # a call to a tool that was not offered is not an MCP call: the client gets it
    assert [(i["type"], i["name"]) for i in final["output"][1:]] == [
        ("function_call", "demo__sleep")]


@pytest.mark.parametrize("call, error", [
    ('call demo__sleep {"seconds": 5}',
     {"type": "mcp_protocol_error", "code": -32001, "message": "tools/call timeout after 2s"}),
    ('call demo__raise {"message": "boom"}',
     {"type": "mcp_tool_execution_error",
      "content": [{"type": "text", "text": "Error executing tool raise"}]}),
    ('call demo__large {"size": 200000}',
     {"type": "mcp_protocol_error", "code": -32603,
      "message": "the tool result is larger than 100000 bytes"}),
    ('call demo__echo [1, 2]',
     {"type": "mcp_protocol_error", "code": -32602,
      "message": "the arguments are not a JSON object"}),
])
def test_a_failed_call_is_reported_and_the_response_completes(api, demo, call, error):
    events, final = stream(api, {"model": "fake-tool-caller", "tools": [mcp_tool(demo)],
                                 "input": call})
    assert types(events) == [*START, *LIST, *call_events(outcome="failed"), *TEXT,
                             "response.completed"]
    failed = final["output"][1]
    assert (failed["status"], failed["output"], failed["error"]) == ("failed", None, error)
    assert final["output"][2]["content"][0]["text"].startswith("Results: ")


def test_a_server_that_is_down_fails_the_listing_and_the_response_completes(api):
    tool = {"type": "mcp", "server_label": "gone", "server_url": "http://127.0.0.1:9/mcp",
            "require_approval": "never"}
    events, final = stream(api, {"model": "fake-tool-caller", "tools": [tool],
                                 "input": "call gone__echo {}"})
    assert types(events)[:6] == [*START, "response.output_item.added",
                                 "response.mcp_list_tools.in_progress",
                                 "response.mcp_list_tools.failed", "response.output_item.done"]
    assert final["output"][0]["error"].startswith(
        "http_error: the MCP server could not be reached (ConnectError")
    assert final["status"] == "completed"


def test_two_servers_and_a_function_tool(api, demo, other, clean_upstream):
    weather = {"type": "function", "name": "get_weather",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}
    events, final = stream(api, {
        "model": "fake-tool-caller",
        "tools": [mcp_tool(demo), mcp_tool(other, "other", allowed_tools=["sum"]), weather],
        "input": 'call demo__echo {"text": "x"}\ncall other__sum {"a": 1, "b": 1}\n'
                 'call get_weather {"city": "Oslo"}'})
    assert [(i["type"], i.get("server_label"), i.get("name"))
            for i in final["output"]] == [
        ("mcp_list_tools", "demo", None), ("mcp_list_tools", "other", None),
        ("mcp_call", "demo", "echo"), ("mcp_call", "other", "sum"),
        ("function_call", None, "get_weather")]
    assert [i.get("output") for i in final["output"][2:4]] == ["echo: x", "2"]
    # function calls end the run: one upstream turn, the client answers next
    assert len(clean_upstream.requests()) == 1
    answer = api.post("/responses", json={
        "model": "fake-tool-caller", "previous_response_id": final["id"],
        "tools": [mcp_tool(demo), mcp_tool(other, "other", allowed_tools=["sum"]), weather],
        "input": [{"type": "function_call_output", "call_id": "call_2", "output": "sunny"}]})
    assert answer.status_code == 200
    # the model sees its three calls as one turn, answered in order
    assert answer.json()["output"][-1]["content"][0]["text"] == "Results: echo: x | 2 | sunny"
    messages = clean_upstream.requests()[-1]["body"]["messages"]
    assert [(m["role"], len(m.get("tool_calls") or ())) for m in messages] == [
        ("user", 0), ("assistant", 3), ("tool", 0), ("tool", 0), ("tool", 0)]


def test_the_listing_is_reused_along_the_chain(api, demo):
    _, first = stream(api, {"model": "fake-tool-caller", "tools": [mcp_tool(demo)],
                            "input": "hello"})
    assert [i["type"] for i in first["output"]] == ["mcp_list_tools", "message"]
    events, second = stream(api, {"model": "fake-tool-caller", "tools": [mcp_tool(demo)],
                                  "previous_response_id": first["id"],
                                  "input": 'call demo__echo {"text": "again"}'})
    assert types(events) == [*START, *call_events(), *TEXT, "response.completed"]
    assert second["output"][0]["output"] == "echo: again"


def test_a_legacy_sse_server(api, demo):
    events, final = stream(api, {"model": "fake-tool-caller",
                                 "tools": [{"type": "mcp", "server_label": "legacy",
                                            "server_url": demo.sse_url,
                                            "require_approval": "never"}],
                                 "input": 'call legacy__sum {"a": 20, "b": 22}'})
    assert types(events) == [*START, *LIST, *call_events(), *TEXT, "response.completed"]
    assert final["output"][1]["output"] == "42"


def test_headers_reach_the_server_and_are_never_stored(api, demo, production):
    secret = "Bearer sekret-token-123"
    events, final = stream(api, {"model": "fake-tool-caller",
                                 "tools": [mcp_tool(demo, headers={"Authorization": secret})],
                                 "input": 'call demo__echo {"text": "h"}'})
    assert demo.stats["authorization"][-1] == secret
    stored = production.manage("shell", "-c", (
        "from responses_app.models import StoredResponse as R; import json; "
        f"r = R.objects.get(id='{final['id']}'); "
        "print(json.dumps([r.request, r.input_items, r.resource]))"))
    assert "sekret" not in stored
    assert "sekret" not in production.logs()


def test_a_registered_server_is_named_by_label_and_its_credentials_stay_hidden(
        api, demo, production):
    production.manage("shell", "-c", (
        "from mcp_tools.models import McpServer; from responses_app.models import Tenant; "
        "s = McpServer(tenant=Tenant.objects.get(name='alice'), label='registered', "
        f"url='{demo.url}'); s.set_headers({{'Authorization': 'Bearer reg-secret'}}); s.save()"))
    events, final = stream(api, {"model": "fake-tool-caller",
                                 "tools": [{"type": "mcp", "server_label": "registered",
                                            "require_approval": "never"}],
                                 "input": 'call registered__echo {"text": "r"}'})
    assert final["output"][1]["output"] == "echo: r"
    assert demo.stats["authorization"][-1] == "Bearer reg-secret"
    assert final["tools"][0]["server_url"] is None
    assert "reg-secret" not in production.manage("shell", "-c", (
        "from mcp_tools.models import McpServer; "
        "print(list(McpServer.objects.values()))"))
    unknown = api.post("/responses", json={"model": "fake-tool-caller", "input": "hi",
                                           "tools": [{"type": "mcp", "server_label": "nope"}]})
    assert unknown.status_code == 400
    assert unknown.json()["error"]["message"] == (
        "MCP tool 'nope' has no 'server_url' and no server is registered under that label.")


def test_embedded_mode_runs_mcp_tools_the_same_way(upstream, tmp_path_factory, demo,
                                                   embedded_database_url):
    workdir = tmp_path_factory.mktemp("embedded-mcp")
    deployment = Deployment(workdir, {
        "DATABASE_URL": embedded_database_url, "UPSTREAM_BASE_URL": upstream.base_url,
        "MCP_EGRESS_ALLOWLIST": "127.0.0.1/32"}, worker=False)
    deployment.manage("migrate", "-v0")
    key = deployment.new_api_key("solo")
    deployment.start()
    try:
        with httpx.Client(base_url=deployment.base_url, timeout=30,
                          headers={"Authorization": f"Bearer {key}"}) as client:
            events, final = stream(client, {
                "model": "fake-tool-caller",
                "tools": [mcp_tool(demo, headers={"Authorization": "Bearer embedded"})],
                "input": 'call demo__sum {"a": 3, "b": 4}'})
    finally:
        deployment.stop()
    assert types(events) == [*START, *LIST, *call_events(), *TEXT, "response.completed"]
    assert final["output"][2]["content"][0]["text"] == "Results: 7"
    assert demo.stats["authorization"][-1] == "Bearer embedded"


def test_max_tool_calls_bounds_the_calls_and_the_model_answers_without_tools(
        api, demo, clean_upstream):
    events, final = stream(api, {"model": "fake-tool-caller", "tools": [mcp_tool(demo)],
                                 "max_tool_calls": 1,
                                 "input": 'call demo__echo {"text": "x"}\n'
                                          'call demo__sum {"a": 1, "b": 2}'})
    assert [(i["type"], i.get("status"), i.get("output")) for i in final["output"]] == [
        ("mcp_list_tools", None, None), ("mcp_call", "completed", "echo: x"),
        ("mcp_call", "failed", None), ("message", "completed", None)]
    assert final["output"][2]["error"] == {
        "type": "mcp_protocol_error", "code": -32603,
        "message": "the response reached its limit of 1 MCP calls"}
    assert [r["body"]["tool_choice"] for r in clean_upstream.requests()] == ["auto", "none"]
    assert final["output"][3]["content"][0]["text"] == (
        "Results: echo: x | Error (mcp_protocol_error): the response reached its limit of 1 "
        "MCP calls")


def test_a_server_that_answers_garbage_fails_the_listing(api, upstream):
    events, final = stream(api, {"model": "fake-text", "input": "hi", "tools": [
        {"type": "mcp", "server_label": "junk", "server_url": f"{upstream.base_url}/models"}]})
    assert final["output"][0]["error"] == "mcp_protocol_error: Not Found"
    assert final["status"] == "completed"


def test_approval_with_the_whole_history_and_store_false(api, demo):
    tool = mcp_tool(demo, require_approval="always")
    ask = 'call demo__echo {"text": "stateless"}'
    _, first = stream(api, {"model": "fake-tool-caller", "tools": [tool], "store": False,
                            "input": ask})
    request = first["output"][1]
    history = [{"role": "user", "content": ask}, *first["output"],
               {"type": "mcp_approval_response", "approval_request_id": request["id"],
                "approve": True}]
    events, second = stream(api, {"model": "fake-tool-caller", "tools": [tool], "store": False,
                                  "input": history})
    assert types(events) == [*START, *call_events(deltas=1), *TEXT, "response.completed"]
    assert second["output"][1]["content"][0]["text"] == "Results: echo: stateless"
    # the next turn resends it all, the call included: history, not a new approval
    events, third = stream(api, {"model": "fake-tool-caller", "tools": [tool], "store": False,
                                 "input": [*history, *second["output"],
                                           {"role": "user", "content": "thanks"}]})
    assert [i["type"] for i in third["output"]] == ["message"]
    # sending the approval again without its call is a replay
    replay = api.post("/responses", json={"model": "fake-tool-caller", "tools": [tool],
                                          "store": False, "input": history})
    assert replay.status_code == 400


def test_cancel_stops_a_tool_call_in_flight(api, demo):
    from tests.invariants import check_cancelled_stream
    from tests.test_e2e_durable import EventReader, wait_for

    body = {"model": "fake-tool-caller", "tools": [mcp_tool(demo)], "background": True,
            "stream": True, "input": 'call demo__sleep {"seconds": 30}'}
    with api.stream("POST", "/responses", json=body) as response:
        reader = EventReader(response)
        reader.read_until(lambda e: e["type"] == "response.mcp_call_arguments.done")
        wait_for(lambda: demo.stats["sleeping"] == 1, "the tool call to start")
        response_id = reader.events[0]["response"]["id"]
        cancelled = api.post(f"/responses/{response_id}/cancel").json()
        events = reader.read_to_end()
    assert cancelled["status"] == "cancelled"
    output = check_cancelled_stream(events)
    assert [(item["type"], item.get("status")) for item in output] == [
        ("mcp_list_tools", None), ("mcp_call", "incomplete")]
    assert cancelled["output"] == output


def test_a_cancelled_tool_loop_counts_every_upstream_call(production, demo, clean_upstream):
    """Cancelled during its second upstream call (the answer after the MCP call, held after
    `Results: `): the response's usage is the first call's reported usage plus the cut
    call's, counted as a steered call's is (the route's estimate: UTF-8 bytes / 4 of the
    request as rendered, and of what it generated); the tenant's usage rows and its monthly
    quota counter are charged exactly that."""
    from tests.deployment_setup import provision, quota_counter
    from tests.invariants import check_cancelled_stream
    from tests.test_e2e_durable import cancelled_mid_stream
    from upstreams.token_counting import render_chat

    [key] = provision(production, {"mcp-cancel-usage": {
        "keys": 1, "limits": {"monthly_token_budget": 1_000_000}}})["mcp-cancel-usage"]
    held = f"fake-tool-caller-held-{time.time_ns()}"
    body = {"model": held, "tools": [mcp_tool(demo)], "background": True, "stream": True,
            "input": 'call demo__echo {"text": "hi"}'}
    with httpx.Client(base_url=production.base_url, timeout=30,
                      headers={"Authorization": f"Bearer {key}"}) as api:
        response_id, cancelled, events = cancelled_mid_stream(
            api, body, lambda e: e["type"] == "response.output_text.delta")
        clean_upstream.release(held)
        stored = api.get(f"/responses/{response_id}").json()
        daily = api.get("/usage").json()["data"][-1]["results"]
    output = check_cancelled_stream(events)
    assert [(item["type"], item.get("status")) for item in output] == [
        ("mcp_list_tools", None), ("mcp_call", "completed"), ("message", "incomplete")]
    assert output[2]["content"][0]["text"] == "Results: "
    first, second = [r["body"] for r in clean_upstream.requests()]
    assert second["messages"][-1] == {"role": "tool", "tool_call_id": output[1]["id"],
                                      "content": "echo: hi"}
    # the first call reported 12 + 2 (the fake's usage chunk); the cut one reported none
    cut_input = -(-len(render_chat(second).encode()) // 4)
    cut_output = -(-len("Results: ") // 4)
    assert cut_output == 3
    usage = {"input_tokens": 12 + cut_input,
             "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
             "output_tokens": 2 + cut_output, "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": 12 + cut_input + 2 + cut_output}
    assert cancelled["status"] == stored["status"] == "cancelled"
    assert cancelled["usage"] == stored["usage"] == usage
    assert [{k: v for k, v in row.items() if k != "object"} for row in daily] == [{
        "model": held, "num_model_requests": 1, "input_tokens": usage["input_tokens"],
        "input_cached_tokens": 0, "output_tokens": usage["output_tokens"],
        "output_reasoning_tokens": 0}]
    assert quota_counter(production, "mcp-cancel-usage") == usage["total_tokens"]


def test_a_tool_loop_failing_mid_stream_counts_every_upstream_call(
        production, demo, clean_upstream):
    """The answer after the MCP call breaks after `Results: ` (the connection cut, no usage
    chunk): the failed response's usage, streamed in `response.failed` and stored, is the
    first call's reported usage plus the broken call's, counted as a cut call's is (the
    route's estimate of the request as rendered, and of what it generated); the tenant's
    usage rows and its monthly quota counter are charged exactly that."""
    from tests.deployment_setup import provision, quota_counter
    from upstreams.token_counting import render_chat

    [key] = provision(production, {"mcp-failed-usage": {
        "keys": 1, "limits": {"monthly_token_budget": 1_000_000}}})["mcp-failed-usage"]
    model = "fake-tool-caller-drop"
    with httpx.Client(base_url=production.base_url, timeout=30,
                      headers={"Authorization": f"Bearer {key}"}) as api:
        events, final = stream(api, {"model": model, "tools": [mcp_tool(demo)],
                                     "input": 'call demo__echo {"text": "hi"}'})
        stored = api.get(f"/responses/{final['id']}").json()
        daily = api.get("/usage").json()["data"][-1]["results"]
    assert types(events) == [*START, *LIST, *call_events(),
                             *TEXT[:3], *TEXT[4:], "response.failed"]
    assert final["error"] == {"code": "server_error", "message": (
        "The upstream connection failed mid-stream: the upstream closed the connection")}
    assert [(item["type"], item["status"]) for item in final["output"][1:]] == [
        ("mcp_call", "completed"), ("message", "incomplete")]
    assert final["output"][2]["content"][0]["text"] == "Results: "
    first, second = [r["body"] for r in clean_upstream.requests()]
    assert second["messages"][-1]["role"] == "tool"
    # the first call reported 12 + 2 (the fake's usage chunk); the broken one reported none
    cut_input = -(-len(render_chat(second).encode()) // 4)
    usage = {"input_tokens": 12 + cut_input,
             "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
             "output_tokens": 2 + 3, "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": 12 + cut_input + 2 + 3}
    assert final["status"] == stored["status"] == "failed"
    assert final["usage"] == stored["usage"] == usage
    assert [{k: v for k, v in row.items() if k != "object"} for row in daily] == [{
        "model": model, "num_model_requests": 1, "input_tokens": usage["input_tokens"],
        "input_cached_tokens": 0, "output_tokens": usage["output_tokens"],
        "output_reasoning_tokens": 0}]
    assert quota_counter(production, "mcp-failed-usage") == usage["total_tokens"]



def test_a_chain_lists_the_tools_once(api, demo):
    """The listing made on the first turn serves every call along the chain: the `mcp`
    client is given it, so it never lists the tools itself before a call."""
    methods = demo.stats["methods"]
    before = len(methods)
    _, first = stream(api, {"model": "fake-tool-caller", "tools": [mcp_tool(demo)],
                            "input": 'call demo__echo {"text": "one"}'})
    _, second = stream(api, {"model": "fake-tool-caller", "tools": [mcp_tool(demo)],
                             "previous_response_id": first["id"],
                             "input": 'call demo__echo {"text": "two"}\n'
                                      'call demo__sum {"a": 1, "b": 2}'})
    assert [i["type"] for i in first["output"]] == ["mcp_list_tools", "mcp_call", "message"]
    assert [i.get("output") for i in second["output"]] == ["echo: two", "3", None]
    calls = [m for m in methods[before:] if m.startswith("tools/")]
    assert calls == ["tools/list", "tools/call", "tools/call", "tools/call"]


def test_a_custom_tool_call_ends_the_run_for_the_client(api, demo, clean_upstream):
    patch = {"type": "custom", "name": "apply_patch"}
    events, final = stream(api, {
        "model": "fake-tool-caller", "tools": [mcp_tool(demo), patch],
        "input": 'call demo__echo {"text": "x"}\ncall apply_patch {"input": "*** Begin"}'})
    assert [(i["type"], i.get("name")) for i in final["output"]] == [
        ("mcp_list_tools", None), ("mcp_call", "echo"), ("custom_tool_call", "apply_patch")]
    assert final["output"][2]["input"] == "*** Begin"
    # the client runs the custom tool: no second upstream turn
    assert len(clean_upstream.requests()) == 1


def test_a_tool_output_holding_a_nul_is_replaced_and_stored(api, demo):
    """Postgres cannot hold NUL: a tool's becomes U+FFFD, in the stream as in the stored
    response and its conversation (before, the response could not be stored)."""
    conversation = api.post("/conversations", json={}).json()["id"]
    _, final = stream(api, {"model": "fake-tool-caller", "tools": [mcp_tool(demo)],
                            "conversation": conversation,
                            "input": 'call demo__echo {"text": "a\\u0000b"}'})
    _, call, message = final["output"]
    assert (final["status"], call["output"], message["content"][0]["text"]) == (
        "completed", "echo: a\ufffdb", "Results: echo: a\ufffdb")
    assert api.get(f"/responses/{final['id']}").json() == final
    items = api.get(f"/conversations/{conversation}/items",
                    params={"order": "asc", "limit": 100}).json()["data"]
    assert [item["output"] for item in items if item["type"] == "mcp_call"] == ["echo: a\ufffdb"]
