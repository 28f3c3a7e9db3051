"""Steering on a WebSocket (`response.steer`) on the production path (Daphne, a Celery worker,
Redis, Postgres, the fake upstream over HTTP): a steer stops the running response (its
upstream request closed, it ends `incomplete`, `steered`, with what it streamed) and its
input becomes the input of the automatic successor; a call the client must answer is not
cut (the input waits for its output); a steer with nothing running, once the response
ended, or on a response with a conversation or auto-compaction fails with OpenAI's codes.
Steering events go through the openai SDK's beta server event models, every response's
events through the stream oracles and invariant checker."""
import json
import time

import pytest
from pydantic import TypeAdapter

from tests.invariants import check_stream
from upstreams.token_counting import render_chat
from tests.oracles import validate_event
from tests.test_e2e_durable import bench_text, wait_for
from tests.websocket_client import TERMINAL, open_socket, send

STEER_TYPES = {"response.steer.accepted", "response.steer.pending", "response.steer.failed"}
ENDED = "The response completed and is no longer accepting steering input."


@pytest.fixture(scope="module")
def server_events():
    from openai.types.beta import BetaResponsesServerEvent

    return TypeAdapter(BetaResponsesServerEvent)


@pytest.fixture
def ws(production, tenant_key):
    with open_socket(production, tenant_key) as socket:
        yield socket


def steer(ws, target, steered) -> None:
    ws.send(json.dumps({"type": "response.steer", "previous_response_id": target,
                        "input": steered}))


def read_until(ws, done, on_frame=lambda frame: None) -> tuple[list, list]:
    """Frames until `done(responses)`: (the responses' events, each response's list; the
    steering events)."""
    responses, steers, current = [], [], []
    while not done(responses):
        frame = json.loads(ws.recv(30))
        on_frame(frame)
        if frame["type"] in STEER_TYPES:
            steers.append(frame)
            continue
        current.append(frame)
        if frame["type"] in TERMINAL or frame["type"] == "error":
            responses.append(current)
            current = []
    return responses, steers


def checked(events: list) -> dict:
    for event in events:
        validate_event(event)
    return check_stream(events)


def failed(target, steered, code: str, message: str, sequence: int) -> dict:
    return {"type": "response.steer.failed", "sequence_number": sequence,
            "steer": {"previous_response_id": target, "input": steered},
            "error": {"type": "invalid_request_error", "code": code, "message": message}}


STEERED_EVENTS = [
    "response.created", "response.in_progress", "response.output_item.added",
    "response.content_part.added", "response.output_text.delta", "response.output_text.delta",
    "response.output_text.done", "response.content_part.done", "response.output_item.done",
    "response.incomplete"]


def test_a_steer_stops_the_response_and_its_successor_continues_it(
        ws, api, clean_upstream, server_events):
    """The steered response's upstream request is closed at once (the fake upstream holds
    it: only a disconnect ends it); it is stored `incomplete` (`steered`) with exactly what
    was streamed; its successor's upstream request continues it with the steering input."""
    held = f"bench-4-1-held2-steer{time.time_ns()}"
    send(ws, model=held, input="first", instructions="Be brief.")
    steered = [{"type": "message", "role": "user", "content": "also say hi"},
               {"role": "user", "content": [{"type": "input_text", "text": "in French"}]}]
    deltas, target = [], {}

    def steer_when_streaming(frame):
        if frame["type"] == "response.created":
            target.setdefault("id", frame["response"]["id"])
        if frame["type"] == "response.output_text.delta":
            deltas.append(frame["delta"])
            if len(deltas) == 2:  # all the upstream sent before it holds
                steer(ws, target["id"], steered)
        if frame["type"] == "response.incomplete":  # the successor is held too
            clean_upstream.release(held)

    responses, steers = read_until(ws, lambda done: len(done) == 2, steer_when_streaming)
    for event in steers:
        server_events.validate_python(event)
    assert [(e["type"], e["sequence_number"], e["steer"]["previous_response_id"])
            for e in steers] == [("response.steer.accepted", 0, target["id"])]
    assert set(steers[0]) == {"type", "sequence_number", "steer"}
    assert steers[0]["steer"]["id"].startswith("steer_")
    assert [e["type"] for e in responses[0]] == STEERED_EVENTS
    first, successor = checked(responses[0]), checked(responses[1])
    assert first["status"] == "incomplete"
    assert first["incomplete_details"] == {"reason": "steered"}
    assert [(item["type"], item["status"], item["content"][0]["text"])
            for item in first["output"]] == [("message", "incomplete", "w0 w1 ")]
    assert [e["delta"] for e in responses[0] if e["type"] == "response.output_text.delta"] == [
        "w0 ", "w1 "]
    wait_for(lambda: clean_upstream.stats()["disconnects"] == 1, "the upstream to see the close")
    stored = api.get(f"/responses/{target['id']}").json()
    assert stored["status"] == "incomplete"
    assert stored["incomplete_details"] == {"reason": "steered"}
    assert stored["output"] == first["output"]
    assert successor["status"] == "completed"
    assert successor["previous_response_id"] == target["id"]
    assert successor["instructions"] == "Be brief." and successor["model"] == held
    assert successor["output"][0]["content"][0]["text"] == bench_text(4)
    first_request, second_request = [r["body"] for r in clean_upstream.requests()]
    assert first_request["messages"] == [{"role": "system", "content": "Be brief."},
                                         {"role": "user", "content": "first"}]
    assert second_request["messages"] == [
        {"role": "system", "content": "Be brief."}, {"role": "user", "content": "first"},
        {"role": "assistant", "content": "w0 w1 "},
        {"role": "user", "content": "also say hi"},
        {"role": "user", "content": "in French"}]  # one text part: sent as a string
    assert ({k: v for k, v in first_request.items() if k != "messages"}
            == {k: v for k, v in second_request.items() if k != "messages"})
    assert clean_upstream.stats()["completed"] == 1  # the successor's
    # the cut call reported no usage: its tokens counted by the route's counter (the
    # default route's estimate, UTF-8 bytes / 4): its request as rendered, what it generated
    prompt = -(-len(render_chat(first_request).encode()) // 4)
    assert (prompt, -(-len("w0 w1 ") // 4)) == (9, 2)
    assert first["usage"] == stored["usage"] == {
        "input_tokens": 9, "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": 2, "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 11}
    assert successor["usage"]["output_tokens"] == 4  # the fake's own count: a usage chunk


def test_responses_with_a_conversation_or_compaction_refuse_steering(ws, api, clean_upstream):
    conversation = api.post("/conversations", json={}).json()["id"]
    bound = {"conversation": conversation}
    compacting = {"context_management": [{"type": "compaction", "compact_threshold": 1000}]}
    messages = ["Responses bound to a conversation do not support steering.",
                "Responses using automatic compaction (context_management) do not support "
                "steering."]
    for sequence, (extra, message) in enumerate(zip((bound, compacting), messages)):
        held = f"bench-2-1-held1-refuse{sequence}-{time.time_ns()}"
        send(ws, model=held, input="hi", **extra)
        created = json.loads(ws.recv(30))
        assert created["type"] == "response.created", created
        target = created["response"]["id"]
        steer(ws, target, "stop")

        def release_when_refused(frame):
            if frame["type"] == "response.steer.failed":
                clean_upstream.release(held)

        responses, steers = read_until(ws, lambda done: len(done) == 1, release_when_refused)
        assert steers == [failed(target, "stop", "steering_not_supported", message, sequence)]
        assert checked([created] + responses[0])["status"] == "completed"
    assert clean_upstream.stats()["disconnects"] == 0


def test_a_steer_with_nothing_running_fails(ws, server_events):
    steer(ws, "resp_nothing", "hello?")
    frame = json.loads(ws.recv(30))
    server_events.validate_python(frame)
    assert frame == failed("resp_nothing", "hello?", "response_not_found",
                           "No response with id 'resp_nothing' is running on this "
                           "connection.", 0)
    send(ws, model="fake-text", store=False, input="hi")
    responses, _ = read_until(ws, lambda done: len(done) == 1)
    final = checked(responses[0])
    steer(ws, final["id"], "too late")  # the client has seen the end: it always fails
    frame = json.loads(ws.recv(30))
    server_events.validate_python(frame)
    assert frame == failed(final["id"], "too late", "response_already_completed", ENDED, 1)


def test_bad_steering_input_fails_without_an_id(ws):
    bad = [{"role": "assistant", "content": "I will"}]
    steer(ws, "resp_x", bad)
    assert json.loads(ws.recv(30)) == failed(
        "resp_x", bad, "invalid_input", "input[0]: steering accepts only messages with the "
        "'user' role, with only 'type', 'role' and 'content'.", 0)
    ws.send(json.dumps({"type": "response.steer", "previous_response_id": "resp_x",
                        "input": "x", "stream_id": "a"}))
    assert json.loads(ws.recv(30)) == failed(
        "resp_x", "x", "invalid_input", "Unknown parameter 'stream_id': response.steer "
        "accepts only 'type', 'previous_response_id' and 'input'.", 1)


def test_a_steer_racing_the_end(ws, clean_upstream, server_events):
    """Sent as the last output events arrive (a later one each attempt): either it is
    accepted and the successor carries it, or it fails as too late and its input comes
    back; never lost."""
    outcomes = set()
    for attempt in range(5):
        clean_upstream.clear()
        send(ws, model="bench-3-1", store=False, input=f"race {attempt}")
        sent = {}

        def steer_at_the_end(frame):
            seen.append(frame)
            if len(seen) == 6 + attempt and not sent:
                sent["target"] = frame_target["id"]
                steer(ws, frame_target["id"], f"steer {attempt}")
            if frame["type"] == "response.created" and not frame_target:
                frame_target.update(frame["response"])

        frame_target, seen = {}, []
        responses, steers = read_until(
            ws, lambda done: len(done) == 1, steer_at_the_end)
        first = checked(responses[0])
        if not steers:
            steers.append(json.loads(ws.recv(30)))
        server_events.validate_python(steers[0])
        kind = steers[0]["type"]
        outcomes.add(kind)
        if kind == "response.steer.failed":
            assert {k: v for k, v in steers[0].items() if k != "sequence_number"} == {
                k: v for k, v in failed(first["id"], f"steer {attempt}",
                                        "response_already_completed", ENDED, 0).items()
                if k != "sequence_number"}
            assert len(clean_upstream.requests()) == 1
            continue
        assert kind == "response.steer.accepted"
        assert steers[0]["steer"]["previous_response_id"] == first["id"]
        more, _ = read_until(ws, lambda done: len(done) == 1)
        successor = checked(more[0])
        assert successor["previous_response_id"] == first["id"]
        # stopped by the steer (what it streamed), or completed before the stop took effect
        streamed = "".join(e["delta"] for e in responses[0]
                           if e["type"] == "response.output_text.delta")
        if first["status"] == "incomplete":
            assert first["incomplete_details"] == {"reason": "steered"}
        else:
            assert first["status"] == "completed" and streamed == bench_text(3)
        assert [r["body"]["messages"] for r in clean_upstream.requests()][-1] == [
            {"role": "user", "content": f"race {attempt}"},
            {"role": "assistant", "content": streamed},
            {"role": "user", "content": f"steer {attempt}"}]
    assert outcomes <= {"response.steer.accepted", "response.steer.failed"}


def test_a_steer_waits_for_the_clients_tool_output(ws, clean_upstream, server_events):
    held = f"fake-tool-loop-1-held-{time.time_ns()}"
    tools = [{"type": "function", "name": "step", "parameters": {"type": "object"}}]
    send(ws, model=held, store=False, tools=tools, input="go")
    target = {}

    def steer_in_the_call(frame):  # a call the client must answer is not cut
        if frame["type"] == "response.created":
            target.setdefault("id", frame["response"]["id"])
        if frame["type"] == "response.function_call_arguments.delta" and "sent" not in target:
            target["sent"] = steer(ws, target["id"], "then stop")
        if frame["type"] == "response.steer.accepted":
            clean_upstream.release(held)

    responses, steers = read_until(ws, lambda done: len(done) == 1, steer_in_the_call)
    target = target["id"]
    first = checked(responses[0])
    assert first["status"] == "completed"
    assert first["output"][-1]["type"] == "function_call"
    pending = json.loads(ws.recv(30))  # after response.completed
    for event in steers + [pending]:
        server_events.validate_python(event)
    steer_ref = {"id": steers[0]["steer"]["id"], "previous_response_id": target}
    assert [e["type"] for e in steers] == ["response.steer.accepted"]
    assert pending == {"type": "response.steer.pending", "sequence_number": 1,
                       "reason": "waiting_for_required_input", "steer": steer_ref,
                       "required_input": [{"type": "function_call_output",
                                           "call_id": "call_step_1", "name": "step"}]}
    send(ws, model=held, store=False, tools=tools, previous_response_id=target,
         input=[{"type": "function_call_output", "call_id": "call_step_1", "output": "ok"}])
    responses, steers = read_until(ws, lambda done: len(done) == 1)
    final = checked(responses[0])
    assert steers == [] and final["output"][0]["content"][0]["text"] == "Done after 1 steps."
    assert clean_upstream.requests()[-1]["body"]["messages"] == [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [{
            "id": "call_step_1", "type": "function",
            "function": {"name": "step", "arguments": '{"step": 1}'}}]},
        {"role": "tool", "tool_call_id": "call_step_1", "content": "ok"},
        {"role": "user", "content": "then stop"}]  # after the call's result it needs
    assert len(clean_upstream.requests()) == 2  # no automatic successor
    assert clean_upstream.stats()["disconnects"] == 0


def test_a_steer_during_a_tool_call_counts_the_calls_made(ws, api, clean_upstream):
    """Steered while its MCP call runs (no upstream call in flight): the response ends
    `incomplete` (`steered`) and its usage is exactly the one upstream call it made, as the
    upstream reported it (12 + 2, the fake's usage chunk): nothing cut, nothing counted."""
    from tests.mcp_server import McpTestServer

    demo = McpTestServer("demo").start()
    try:
        tools = [{"type": "mcp", "server_label": "demo", "server_url": demo.url,
                  "require_approval": "never"}]
        send(ws, model="fake-tool-caller", tools=tools, input='call demo__sleep {"seconds": 30}')
        target = {}

        def steer_in_the_tool_call(frame):
            if frame["type"] == "response.created":
                target.setdefault("id", frame["response"]["id"])
            if frame["type"] == "response.mcp_call_arguments.done":
                wait_for(lambda: demo.stats["sleeping"] == 1, "the tool call to start")
                steer(ws, target["id"], "never mind")

        responses, steers = read_until(ws, lambda done: len(done) == 2, steer_in_the_tool_call)
    finally:
        demo.stop()
    assert [e["type"] for e in steers] == ["response.steer.accepted"]
    first, successor = checked(responses[0]), checked(responses[1])
    assert (first["status"], first["incomplete_details"]) == ("incomplete",
                                                              {"reason": "steered"})
    assert [(item["type"], item.get("status")) for item in first["output"]] == [
        ("mcp_list_tools", None), ("mcp_call", "incomplete")]
    assert len(clean_upstream.requests()) == 2  # the first's one call, the successor's
    usage = {"input_tokens": 12,
             "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
             "output_tokens": 2, "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": 14}
    assert first["usage"] == api.get(f"/responses/{target['id']}").json()["usage"] == usage
    assert successor["output"][-1]["content"][0]["text"] == "No tools."


def test_a_steer_while_the_summary_streams_closes_it_and_counts_it(ws, clean_upstream):
    """Steered while its compaction's summary streams (held after its first chunk, `w0 `):
    the summary's connection is closed at once, the response ends `incomplete` (`steered`),
    and its usage is the summary call's, counted as a cut turn's (no usage chunk came: the
    default route's estimate). Its compaction item is closed before its end, unfinished,
    and the successor sends the whole history (the unfinished compaction hides nothing)."""
    from responses_app.context.summary import COMPACTION_PROMPT
    from tests.context_deployment import is_unfinished_here

    held = f"bench-4-1-held1-steersummary{time.time_ns()}"
    send(ws, model=held, input=[{"role": "user", "content": "remember the gamma plan"},
                                {"type": "compaction_trigger"}])
    target = {}

    def steer_while_summarizing(frame):
        if frame["type"] == "response.created":
            target.setdefault("id", frame["response"]["id"])
        if frame["type"] == "response.compaction.compacting":
            wait_for(lambda: clean_upstream.stats()["in_flight"] == 1, "the summary stream")
            steer(ws, target["id"], [{"role": "user", "content": "and delta"}])
        if frame["type"] == "response.incomplete":  # the summary's stream closed; the
            wait_for(lambda: clean_upstream.stats()["disconnects"] == 1,  # successor held
                     "the upstream to see the summary's close")
            clean_upstream.release(held)

    responses, steers = read_until(ws, lambda done: len(done) == 2, steer_while_summarizing)
    assert [e["type"] for e in steers] == ["response.steer.accepted"]
    assert [e["type"] for e in responses[0]] == [
        "response.created", "response.in_progress", "response.output_item.added",
        "response.compaction.compacting", "response.output_item.done", "response.incomplete"]
    first = checked(responses[0])
    assert first["output"] == [responses[0][4]["item"]]
    assert is_unfinished_here(responses[0][4]["item"])
    assert first["incomplete_details"] == {"reason": "steered"}
    summary_body = {"model": held, "stream": True, "stream_options": {"include_usage": True},
                    "messages": [{"role": "user", "content": "remember the gamma plan"},
                                 {"role": "user", "content": COMPACTION_PROMPT}]}
    summary_request, successor = [r["body"] for r in clean_upstream.requests()]
    assert summary_request == summary_body
    assert successor == {"model": held, "stream": True,
                         "stream_options": {"include_usage": True},
                         "messages": [{"role": "user", "content": "remember the gamma plan"},
                                      {"role": "user", "content": "and delta"}]}
    prompt = -(-len(render_chat(summary_body).encode()) // 4)
    assert first["usage"] == {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": 1, "output_tokens_details": {"reasoning_tokens": 0},  # "w0 "
        "total_tokens": prompt + 1}
    assert responses[1][-1]["type"] == "response.completed"
    assert (clean_upstream.stats()["disconnects"], clean_upstream.stats()["completed"]) == (1, 1)
