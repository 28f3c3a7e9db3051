"""WebSocket mode on the production path (Daphne, a Celery worker, Redis, Postgres, the fake
upstream over HTTP): the WebSocket cases of the Open Responses compliance suite, reproduced
from their descriptions, and what a socket does with the same pipeline as HTTP.

Every turn's events go through the openai SDK's and Open Responses' models and the shared
invariant checker (tests/websocket_client.checked_turn)."""
import json
import time

import pytest

from tests.invariants import check_stream
from tests.oracles import validate_event
from tests.test_e2e_durable import bench_text
from tests.upstream_scenarios import SCENARIOS, render_messages, text_of
from tests.websocket_client import checked_turn, error_turn, open_socket, read_turn, send

HELLO = text_of(SCENARIOS["fake-text"])


def not_found(response_id: str) -> dict:
    return {"type": "error", "status": 400, "error": {
        "type": "invalid_request_error", "code": "previous_response_not_found",
        "message": f"Previous response with id '{response_id}' not found.",
        "param": "previous_response_id"}}


def user(text: str) -> dict:
    return {"role": "user", "content": text}


def text_output(final: dict) -> str:
    return final["output"][0]["content"][0]["text"]


@pytest.fixture
def ws(production, tenant_key):
    with open_socket(production, tenant_key) as socket:
        yield socket


# ---------------------------------------------------------------- the compliance cases


def test_websocket_response(ws):
    events, final = checked_turn(ws, model="fake-text",
                                 input=[{"type": "message", "role": "user",
                                         "content": "Count from 1 to 3."}])
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert final["status"] == "completed" and text_output(final) == HELLO


def test_websocket_sequential_responses(ws):
    first_events, first = checked_turn(ws, model="fake-text", store=False,
                                       input="Reply with exactly: first")
    second_events, second = checked_turn(ws, model="fake-text", store=False,
                                         input="Reply with exactly: second")
    assert first["status"] == second["status"] == "completed"
    assert first["id"] != second["id"]
    assert [e["type"] for e in first_events] == [e["type"] for e in second_events]
    assert second_events[0]["sequence_number"] == 0


def test_websocket_continuation_store_false(ws, clean_upstream):
    _, first = checked_turn(ws, model="fake-echo", store=False,
                            input="Remember the code word: cobalt. Reply with OK.")
    _, second = checked_turn(ws, model="fake-echo", store=False,
                             previous_response_id=first["id"],
                             input="What is the code word? Reply with only the code word.")
    assert second["previous_response_id"] == first["id"]
    sent = clean_upstream.requests()[-1]["body"]["messages"]
    assert sent == [user("Remember the code word: cobalt. Reply with OK."),
                    {"role": "assistant", "content": text_output(first)},
                    user("What is the code word? Reply with only the code word.")]
    assert text_output(second) == render_messages(sent)


def test_websocket_reconnect_store_false_recovery(production, tenant_key):
    with open_socket(production, tenant_key) as first_socket:
        _, first = checked_turn(first_socket, model="fake-text", store=False,
                                input="Remember the code word: copper. Reply with OK.")
    with open_socket(production, tenant_key) as ws:
        assert error_turn(ws, model="fake-text", store=False, previous_response_id=first["id"],
                          input="Try to continue after reconnect.") == not_found(first["id"])
        _, recovered = checked_turn(ws, model="fake-text", store=False,
                                    input=[{"type": "message", "role": "user",
                                            "content": "Start again."}])
    assert recovered["status"] == "completed" and recovered["previous_response_id"] is None


def test_websocket_generate_false(ws, clean_upstream):
    send(ws, model="fake-echo", store=False, generate=False, instructions="Be brief.",
         input="Warm up: the code word is ember.")
    events = read_turn(ws)
    assert [(e["type"], e["sequence_number"]) for e in events] == [
        ("response.created", 0), ("response.in_progress", 1), ("response.completed", 2)]
    prepared = events[-1]["response"]
    assert prepared["output"] == [] and prepared["status"] == "completed"
    assert prepared["usage"]["total_tokens"] == 0
    assert clean_upstream.requests() == []  # no model call
    _, final = checked_turn(ws, model="fake-echo", store=False, instructions="Be brief.",
                            previous_response_id=prepared["id"], input="The code word?")
    assert [r["body"]["messages"] for r in clean_upstream.requests()] == [[
        {"role": "system", "content": "Be brief."},
        user("Warm up: the code word is ember."), user("The code word?")]]
    assert final["previous_response_id"] == prepared["id"]


def test_websocket_previous_response_not_found(ws):
    missing = f"resp_openresponses_missing_{time.time_ns()}"
    assert error_turn(ws, model="fake-text", store=False, previous_response_id=missing,
                      input="This should fail.") == not_found(missing)


def test_websocket_failed_continuation_evicts_cache(ws):
    _, first = checked_turn(ws, model="fake-text", store=False,
                            input="Remember the code word: ember. Reply with OK.")
    failed = error_turn(ws, model="fake-text", store=False, previous_response_id=first["id"],
                        input=[{"type": "function_call_output",
                                "call_id": "call_openresponses_missing",
                                "output": "No matching tool call exists."}])
    assert failed == {"type": "error", "status": 400, "error": {
        "type": "invalid_request_error", "code": None, "param": "input",
        "message": "No tool call found for function call output with call_id "
                   "call_openresponses_missing."}}
    assert error_turn(ws, model="fake-text", store=False, previous_response_id=first["id"],
                      input="Try again.") == not_found(first["id"])


def test_websocket_upstream_failure_evicts_cache(ws):
    _, first = checked_turn(ws, model="fake-text", store=False, input="hi")
    events, failed = checked_turn(ws, model="fake-drop", store=False,
                                  previous_response_id=first["id"], input="and then?")
    assert failed["status"] == "failed"
    assert error_turn(ws, model="fake-text", store=False, previous_response_id=first["id"],
                      input="again") == not_found(first["id"])


def test_websocket_compacted_output_starts_a_new_chain(ws, api, clean_upstream):
    conversation = [user("Remember the compaction code word: slate."),
                    {"role": "assistant", "content": "OK."},
                    user("Compress this conversation for later continuation.")]
    compacted = api.post("/responses/compact", json={"model": "fake-echo",
                                                     "input": conversation}).json()
    assert compacted["output"][-1]["type"] == "compaction"
    clean_upstream.clear()
    new_input = [*compacted["output"], user("Continue from here. Reply with exactly: compacted")]
    _, final = checked_turn(ws, model="fake-echo", store=False, tools=[], input=new_input)
    assert final["status"] == "completed" and final["previous_response_id"] is None
    over_http = api.post("/responses", json={"model": "fake-echo", "store": False,
                                             "tools": [], "input": new_input}).json()
    socket_request, http_request = [r["body"]["messages"] for r in clean_upstream.requests()]
    assert socket_request == http_request  # the summary in place of the history, both ways
    assert socket_request[0]["role"] == "system"
    assert text_output(final) == text_output(over_http)


# ---------------------------------------------------------------- the same pipeline as HTTP


def test_store_true_continues_from_the_database(production, tenant_key, api):
    with open_socket(production, tenant_key) as ws:
        _, first = checked_turn(ws, model="fake-text", input="hi")
    assert api.get(f"/responses/{first['id']}").json()["status"] == "completed"
    with open_socket(production, tenant_key) as ws:  # another socket: nothing cached
        _, second = checked_turn(ws, model="fake-text", previous_response_id=first["id"],
                                 input="more")
    items = api.get(f"/responses/{second['id']}/input_items", params={"order": "asc"}).json()
    assert [item["content"][0]["text"] for item in items["data"]] == ["more"]


def test_stored_response_continuing_an_unstored_one_keeps_its_history(ws, api):
    _, first = checked_turn(ws, model="fake-text", store=False, input="one")
    _, second = checked_turn(ws, model="fake-text", store=True,
                             previous_response_id=first["id"], input="two")
    follow = api.post("/responses", json={"model": "fake-echo", "input": "three",
                                          "previous_response_id": second["id"]}).json()
    assert follow["output"][0]["content"][0]["text"] == render_messages([
        user("one"), {"role": "assistant", "content": HELLO}, user("two"),
        {"role": "assistant", "content": HELLO}, user("three")])


def test_another_tenants_previous_response_is_not_found(production, other_tenant_key, ws):
    other = production.client(other_tenant_key).post(
        "/responses", json={"model": "fake-text", "input": "secret"}).json()
    assert error_turn(ws, model="fake-text", previous_response_id=other["id"],
                      input="show me") == not_found(other["id"])


def test_creates_sent_together_run_one_after_another(ws):
    send(ws, model="fake-text", store=False, input="first")
    send(ws, model="fake-text", store=False, input="second")
    first, second = read_turn(ws), read_turn(ws)
    assert first[-1]["type"] == second[-1]["type"] == "response.completed"
    assert first[0]["response"]["id"] != second[0]["response"]["id"]
    assert [e["sequence_number"] for e in second] == list(range(len(second)))


def test_openai_sdk_websocket_client(openai_client):
    from openai.types.responses import ResponseCompletedEvent

    with openai_client.responses.connect() as connection:
        connection.response.create(model="fake-text", input="hi", store=False)
        events = []
        for event in connection:
            events.append(event)
            if event.type == "response.completed":
                break
    assert isinstance(events[-1], ResponseCompletedEvent)
    assert events[-1].response.output_text == HELLO
    assert [e.sequence_number for e in events] == list(range(len(events)))


# ---------------------------------------------------------------- an agent loop


def test_tool_loop_on_a_socket_matches_http_chaining(production, tenant_key, api,
                                                     clean_upstream):
    steps = 20
    tools = [{"type": "function", "name": "step", "parameters": {"type": "object"}}]
    with open_socket(production, tenant_key) as ws:
        socket_outputs = run_loop(lambda **body: checked_turn(ws, **body)[1], tools, steps,
                                  store=False)
    socket_requests = [r["body"] for r in clean_upstream.requests()]
    clean_upstream.clear()
    http_outputs = run_loop(lambda **body: api.post("/responses", json=body).json(), tools,
                            steps, store=True)  # over HTTP a chain must be stored
    http_requests = [r["body"] for r in clean_upstream.requests()]
    assert len(socket_requests) == steps + 1
    assert socket_requests == http_requests  # the whole history upstream, every turn
    assert socket_outputs == http_outputs
    assert socket_outputs[-1] == [{"type": "message", "text": f"Done after {steps} steps."}]


def run_loop(create, tools, steps: int, store: bool) -> list:
    """A function-tool loop: each turn answers the model's call with its output."""
    final = create(model=f"fake-tool-loop-{steps}", store=store, tools=tools, input="go")
    outputs = [_shape(final)]
    while final["output"][-1]["type"] == "function_call":
        call = final["output"][-1]
        final = create(model=f"fake-tool-loop-{steps}", store=store, tools=tools,
                       previous_response_id=final["id"],
                       input=[{"type": "function_call_output", "call_id": call["call_id"],
                               "output": f"ok {call['arguments']}"}])
        outputs.append(_shape(final))
    return outputs


def _shape(final: dict) -> list:
    """A response's output without its ids (the two runs make their own)."""
    shaped = []
    for item in final["output"]:
        if item["type"] == "function_call":
            shaped.append({"type": "function_call", "call_id": item["call_id"],
                           "name": item["name"], "arguments": item["arguments"]})
        else:
            shaped.append({"type": item["type"], "text": item["content"][0]["text"]})
    return shaped


# ---------------------------------------------------------------- streams (stream_id)


def test_two_streams_interleave_and_stay_separate(ws, upstream):
    held = f"bench-30-1-held3-mux{time.time_ns()}"  # "a" waits until "b" has ended
    send(ws, model=held, store=False, input="a", stream_id="a")
    by_stream, order = {"a": [json.loads(ws.recv(30))], "b": []}, ["a"]
    send(ws, model="bench-30-1", store=False, input="b", stream_id="b")
    while not all(events and events[-1]["type"] == "response.completed"
                  for events in by_stream.values()):
        frame = json.loads(ws.recv(30))
        by_stream[frame["stream_id"]].append(frame)
        order.append(frame["stream_id"])
        if frame["stream_id"] == "b" and frame["type"] == "response.completed":
            upstream.release(held)
    assert order[0] == "a" and order[-1] == "a" and "b" in order  # b ran inside a
    for events in by_stream.values():
        for event in events:
            validate_event(event)
        final = check_stream(events)
        assert final["output"][0]["content"][0]["text"] == bench_text(30)
    assert by_stream["a"][0]["response"]["id"] != by_stream["b"][0]["response"]["id"]


def test_a_stream_forks_another_streams_response(ws, clean_upstream):
    send(ws, model="fake-echo", store=False, input="the code word is cobalt", stream_id="a")
    parent = read_turn(ws)[-1]
    assert parent["stream_id"] == "a"
    send(ws, model="fake-echo", store=False, input="and the fork?", stream_id="b",
         previous_response_id=parent["response"]["id"])
    fork = read_turn(ws)
    assert {frame["stream_id"] for frame in fork} == {"b"}
    assert clean_upstream.requests()[-1]["body"]["messages"] == [
        user("the code word is cobalt"),
        {"role": "assistant", "content": text_output(parent["response"])},
        user("and the fork?")]


def test_a_bad_stream_id(ws):
    assert error_turn(ws, model="fake-text", input="hi", stream_id=7) == {
        "type": "error", "status": 400, "error": {
            "type": "invalid_request_error", "code": "invalid_type", "param": "stream_id",
            "message": "'stream_id' must be a non-empty string."}}
