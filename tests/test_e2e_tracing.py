"""Tracing on a real deployment (Daphne + a Celery worker, OTEL_EXPORTER_OTLP_ENDPOINT
pointed at a test OTLP receiver): one trace per response from the POST through the run
queue to the upstream and MCP calls, with the GenAI attributes and the parent links; the
web's relay of each stream (SSE, a resume, a chat completion, each WebSocket turn a trace
of its own) as one span beside the run; the switch itself (the OTEL_* variables) is
checked without a deployment."""
import json
import time

import pytest

from tests.conftest import production_deployment
from tests.mcp_server import McpTestServer
from tests.oracles import check_sse_stream
from tests.otlp_receiver import OtlpReceiver
from observability.tracing import enabled_by_environment
from tests.servers import RedisServer
from tests.sse import parse_sse
from tests.websocket_client import checked_turn, error_turn, open_socket


@pytest.fixture(scope="module")
def traced(upstream, tmp_path_factory):
    redis_server = RedisServer(tmp_path_factory.mktemp("redis"))
    redis_server.start()
    with OtlpReceiver() as receiver:
        try:
            with production_deployment(upstream, tmp_path_factory, "traced", 0,
                                       redis_base_url=redis_server.base_url,
                                       OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url,
                                       OTEL_BSP_SCHEDULE_DELAY="100",
                                       OTEL_SERVICE_NAME="gateway-under-test",
                                       LOG_LEVEL="INFO") as deployment:
                yield deployment, receiver
        finally:
            redis_server.stop()


@pytest.fixture(scope="module")
def demo():
    server = McpTestServer("demo").start()
    yield server
    server.stop()


def spans_until(receiver, done, timeout=30.0) -> list[dict]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        spans = list(receiver.spans)
        if done(spans):
            return spans
        time.sleep(0.1)
    raise AssertionError(f"spans never arrived: {json.dumps(receiver.spans, indent=1)}")


def with_parents(spans, children) -> bool:
    """Whether `children` were exported with their parents (a parent span ends after its
    children: it may come in a later export)."""
    ids = {s["span_id"] for s in spans}
    return bool(children) and all(child["parent_id"] in ids for child in children)


def by_scope(spans, scope, trace_id) -> list[dict]:
    return [s for s in spans if s["scope"] == scope and s["trace_id"] == trace_id]


def of_response(spans, name, response_id) -> list[dict]:
    return [s for s in spans
            if s["name"] == name and s["attributes"].get("gateway.response.id") == response_id]


def relayed(span: dict) -> dict:
    """A relay span's attributes, its first-event wait (a duration: present, positive)
    taken out."""
    attributes = dict(span["attributes"])
    wait = attributes.pop("gateway.relay.first_event_wait_ms")
    assert isinstance(wait, float) and wait > 0
    return attributes


UNSET, ERROR = 0, 2  # span status codes


def test_one_trace_from_the_post_through_the_run_queue_to_the_upstream_and_mcp_calls(
        traced, demo, upstream):
    deployment, receiver = traced
    key = deployment.new_api_key("tracer")
    with deployment.client(key) as api:
        with api.stream("POST", "/responses", headers={"x-request-id": "req-traced-1"}, json={
                "model": "fake-tool-caller", "stream": True,
                "input": 'call demo__echo {"text": "hi"}',
                "tools": [{"type": "mcp", "server_label": "demo", "server_url": demo.url,
                           "require_approval": "never"}]}) as response:
            raw = response.read()
    events, final = check_sse_stream(raw)
    # the run's span ends after its last upstream call and may come in a later export batch
    spans = spans_until(receiver, lambda spans: any(
        s["name"] == "POST /v1/responses" for s in spans) and sum(
        s["name"] == "chat fake-tool-caller" for s in spans) == 2 and any(
        s["name"] == "run" for s in spans) and any(
        s["name"] == "relay response" for s in spans))
    [post] = [s for s in spans if s["name"] == "POST /v1/responses"]
    trace_id = post["trace_id"]
    assert (post["kind"], post["parent_id"], post["scope"]) == (
        "server", "", "opentelemetry.instrumentation.asgi")
    # the web's relay of the stream: one span beside the run, its events those the client got
    gateway_spans = by_scope(spans, "responses-gateway", trace_id)
    [relay] = [s for s in gateway_spans if s["name"] == "relay response"]
    assert (relay["kind"], relay["parent_id"], relay["status"], relayed(relay)) == (
        "internal", post["span_id"], UNSET, {
            "gateway.response.id": final["id"], "gateway.relay.transport": "sse",
            "gateway.relay.events": len(events), "gateway.relay.outcome": "completed"})
    # the web -> worker hop: the run continues the POST's trace, as its child
    ours = [s for s in gateway_spans if s is not relay]  # the worker's, as it ended them
    [run] = ours[-1:]
    assert (run["name"], run["kind"], run["parent_id"], run["attributes"]) == (
        "run", "consumer", post["span_id"], {"gateway.response.id": final["id"]})
    assert [(s["name"], s["kind"], s["parent_id"]) for s in ours] == [
        ("tools/list", "client", run["span_id"]),
        ("chat fake-tool-caller", "client", run["span_id"]),
        ("tools/call echo", "client", run["span_id"]),
        ("chat fake-tool-caller", "client", run["span_id"]),
        ("run", "consumer", post["span_id"])]
    upstream_port = int(upstream.base_url.split(":")[2].split("/")[0])
    chat = {"gen_ai.operation.name": "chat", "gen_ai.system": "openai",
            "gen_ai.provider.name": "openai", "gen_ai.request.model": "fake-tool-caller",
            "server.address": "127.0.0.1", "server.port": upstream_port,
            # the replica of the route that took the call (upstreams/pool.py): its only one
            "gateway.upstream.replica": upstream.base_url, "gateway.upstream.affinity": "none",
            "gateway.upstream.failovers": 0,
            "gen_ai.response.id": "chatcmpl-faketoolcaller",
            "gen_ai.response.model": "fake-tool-caller",
            "gen_ai.usage.input_tokens": 12, "gen_ai.usage.output_tokens": 2}
    assert ours[1]["attributes"] == {**chat, "gen_ai.response.finish_reasons": ["tool_calls"]}
    assert ours[3]["attributes"] == {**chat, "gen_ai.response.finish_reasons": ["stop"]}
    # the response's usage is the sum of its upstream calls'
    assert (final["usage"]["input_tokens"], final["usage"]["output_tokens"]) == (24, 4)
    mcp_port = int(demo.url.split(":")[2].split("/")[0])
    server = {"server.address": "127.0.0.1", "server.port": mcp_port,
              "gateway.mcp.server_label": "demo"}
    assert ours[0]["attributes"] == {**server, "mcp.method.name": "tools/list"}
    assert ours[2]["attributes"] == {**server, "mcp.method.name": "tools/call",
                                     "gen_ai.operation.name": "execute_tool",
                                     "gen_ai.tool.name": "echo"}
    # Redis and psycopg spans of the same trace, on both sides of the hop
    redis_spans = by_scope(spans, "opentelemetry.instrumentation.redis", trace_id)
    # (the bus flush is not among them: one EVALSHA, packed by hand, carries the entries of
    # every run of the worker's loop, so it belongs to no one run's trace: bus/redis_append.py;
    # nor the web's relay, one pub/sub connection and XREADs packed by hand for every stream
    # the loop holds: bus/redis_listen.py). The web's LPUSH of the run, the worker's GETDEL
    # of the MCP headers the web left for it (mcp_tools/header_store.py)
    assert {"LPUSH", "GETDEL"} <= {s["name"] for s in redis_spans}
    assert by_scope(spans, "opentelemetry.instrumentation.psycopg", trace_id)
    assert {s["service"] for s in spans} == {"gateway-under-test"}
    # the request id's log line names the trace
    access = [json.loads(line) for line in deployment.logs().splitlines()
              if '"gateway.access"' in line and "req-traced-1" in line]
    assert [(a["message"], a["request_id"], a["trace_id"]) for a in access] == [
        ("POST /v1/responses 200", "req-traced-1", trace_id)]


def test_each_websocket_turn_is_a_trace_of_its_own_with_its_run_and_its_relay(traced):
    deployment, receiver = traced
    key = deployment.new_api_key("tracer")
    with open_socket(deployment, key) as ws:
        first_events, first = checked_turn(ws, model="fake-text", input="hi")
        second_events, second = checked_turn(ws, model="fake-drop", input="and?",
                                             previous_response_id=first["id"])
        refused = error_turn(ws, input="no model")
    assert (first["status"], second["status"], refused["status"]) == (
        "completed", "failed", 400)
    turn_name = "WEBSOCKET response.create"
    # the connection's span ends with the socket: after its turns'
    spans = spans_until(receiver, lambda spans: all(
        of_response(spans, name, final["id"]) for final in (first, second)
        for name in (turn_name, "relay response", "run")) and any(
        s["name"] == "HTTP /v1/responses" for s in spans))
    [connection] = [s for s in spans if s["name"] == "HTTP /v1/responses"]
    assert (connection["kind"], connection["parent_id"], connection["scope"]) == (
        "server", "", "opentelemetry.instrumentation.asgi")
    outcomes = {first["id"]: (UNSET, {"gateway.relay.outcome": "completed"}),
                second["id"]: (ERROR, {"gateway.relay.outcome": "failed",
                                       "error.type": second["error"]["code"]})}
    traces = set()
    for model, events, final in (("fake-text", first_events, first),
                                 ("fake-drop", second_events, second)):
        [turn] = of_response(spans, turn_name, final["id"])
        traces.add(turn["trace_id"])
        # a trace of its own, linked to the connection's
        assert (turn["kind"], turn["parent_id"], turn["status"], turn["links"]) == (
            "server", "", UNSET, [(connection["trace_id"], connection["span_id"])])
        request_id = turn["attributes"]["gateway.request.id"]
        assert request_id.startswith("req_")
        assert turn["attributes"] == {"gateway.request.id": request_id,
                                      "gateway.response.id": final["id"],
                                      "gateway.websocket.status": 200}
        ours = by_scope(spans, "responses-gateway", turn["trace_id"])
        [run] = [s for s in ours if s["name"] == "run"]
        [relay] = [s for s in ours if s["name"] == "relay response"]
        assert sorted((s["name"], s["kind"], s["parent_id"]) for s in ours) == sorted([
            (turn_name, "server", ""), ("run", "consumer", turn["span_id"]),
            (f"chat {model}", "client", run["span_id"]),
            ("relay response", "internal", turn["span_id"])])
        status, outcome = outcomes[final["id"]]
        assert (relay["status"], relayed(relay)) == (status, {
            "gateway.response.id": final["id"], "gateway.relay.transport": "websocket",
            "gateway.relay.events": len(events), **outcome})
    # a refused frame: a turn without a response, run or relay
    [turn] = [s for s in spans if s["name"] == turn_name
              and s["attributes"].get("gateway.websocket.status") == 400]
    assert (turn["parent_id"], turn["status"], turn["links"]) == (
        "", UNSET, [(connection["trace_id"], connection["span_id"])])
    assert turn["attributes"] == {"gateway.request.id": turn["attributes"]["gateway.request.id"],
                                  "gateway.websocket.status": 400,
                                  "error.type": refused["error"]["code"]}
    assert by_scope(spans, "responses-gateway", turn["trace_id"]) == [turn]
    assert len(traces | {connection["trace_id"], turn["trace_id"]}) == 4


def test_a_resumed_stream_and_a_chat_completion_stream_are_relayed_in_a_span_each(traced):
    deployment, receiver = traced
    key = deployment.new_api_key("tracer")
    with deployment.client(key) as api:
        stored = api.post("/responses", json={"model": "fake-text", "input": "hi"}).json()
        with api.stream("GET", f"/responses/{stored['id']}",
                        params={"stream": "true", "starting_after": "2"}) as response:
            resumed = parse_sse(response.read()).events
        with api.stream("POST", "/chat/completions", json={
                "model": "fake-text", "stream": True,
                "messages": [{"role": "user", "content": "hi"}]}) as response:
            chat = response.read()
    assert [event["sequence_number"] for event in resumed][:1] == [3]
    blocks = [block for block in chat.split(b"\n\n") if block]  # chunks, then [DONE]
    assert blocks[-1] == b"data: [DONE]"
    completion_id = json.loads(blocks[0].removeprefix(b"data: "))["id"]
    # each relay with its parent (one arriving alone must not end the wait), and the run
    spans = spans_until(receiver, lambda spans: with_parents(spans, of_response(
        spans, "relay response", stored["id"])) and with_parents(spans, of_response(
        spans, "relay chat.completion", completion_id)) and of_response(
        spans, "run", completion_id))
    [resume] = of_response(spans, "relay response", stored["id"])
    [get] = [s for s in spans if s["span_id"] == resume["parent_id"]]
    assert (get["name"], get["kind"], get["trace_id"]) == (
        f"GET /v1/responses/{stored['id']}", "server", resume["trace_id"])
    assert (resume["kind"], resume["status"], relayed(resume)) == ("internal", UNSET, {
        "gateway.response.id": stored["id"], "gateway.relay.transport": "sse",
        "gateway.relay.starting_after": 2, "gateway.relay.events": len(resumed),
        "gateway.relay.outcome": "completed"})
    [relay] = of_response(spans, "relay chat.completion", completion_id)
    [run] = of_response(spans, "run", completion_id)
    [post] = [s for s in spans if s["span_id"] == relay["parent_id"]]
    assert (post["name"], run["parent_id"], run["trace_id"], relay["trace_id"]) == (
        "POST /v1/chat/completions", post["span_id"], post["trace_id"], post["trace_id"])
    assert (relay["kind"], relay["status"], relayed(relay)) == ("internal", UNSET, {
        "gateway.response.id": completion_id, "gateway.relay.transport": "sse",
        "gateway.relay.events": len(blocks), "gateway.relay.outcome": "completed"})


@pytest.mark.parametrize("model, status, outcome", [
    ("fake-text", UNSET, {"gateway.relay.outcome": "completed"}),
    ("fake-length", UNSET, {"gateway.relay.outcome": "incomplete"}),
    ("fake-bad-chunk", ERROR, {"gateway.relay.outcome": "failed",
                               "error.type": "server_error"}),
])
def test_a_resume_after_its_stream_ended_carries_the_outcome_of_the_end(traced, model,
                                                                       status, outcome):
    """A resume whose cursor is the stream's last event: no event, `[DONE]`, and the span
    says how the stream ended, as a relay that saw the end does (before: `cancelled`)."""
    deployment, receiver = traced
    key = deployment.new_api_key("tracer")
    with deployment.client(key) as api:
        with api.stream("POST", "/responses", json={
                "model": model, "input": "hi", "stream": True}) as response:
            events, final = check_sse_stream(response.read())
        last = events[-1]["sequence_number"]
        with api.stream("GET", f"/responses/{final['id']}",
                        params={"stream": "true", "starting_after": str(last)}) as response:
            resumed = response.read()
    assert resumed == b"data: [DONE]\n\n"

    def resumes(spans):
        return [s for s in of_response(spans, "relay response", final["id"])
                if "gateway.relay.starting_after" in s["attributes"]]

    [resume] = resumes(spans_until(receiver, resumes))
    assert (resume["status"], relayed(resume)) == (status, {
        "gateway.response.id": final["id"], "gateway.relay.transport": "sse",
        "gateway.relay.starting_after": last, "gateway.relay.events": 0, **outcome})


def test_a_stream_whose_client_left_says_so_with_the_events_it_got(traced, upstream):
    deployment, receiver = traced
    key = deployment.new_api_key("tracer")
    model = f"bench-10-1-held3-relay{time.time_ns()}"  # held after `w0 w1 w2 `
    try:
        with deployment.client(key) as api:
            with api.stream("POST", "/responses", json={
                    "model": model, "input": "hi", "stream": True}) as response:
                events = []
                for line in response.iter_lines():
                    if line.startswith("data: "):
                        events.append(json.loads(line[6:]))
                    if [e["type"] for e in events].count("response.output_text.delta") == 3:
                        break
        response_id = events[0]["response"]["id"]
        spans = spans_until(receiver, lambda spans: of_response(
            spans, "relay response", response_id))
    finally:
        upstream.release(model)
    [relay] = of_response(spans, "relay response", response_id)
    assert (relay["status"], relayed(relay)) == (UNSET, {
        "gateway.response.id": response_id, "gateway.relay.transport": "sse",
        "gateway.relay.events": len(events), "gateway.relay.outcome": "client_disconnected"})
    assert len(events) == 7  # created, in_progress, the item and its part added, 3 deltas


def test_a_django_view_is_traced_by_the_django_instrumentation(traced):
    deployment, receiver = traced
    key = deployment.new_api_key("tracer")
    with deployment.client(key) as api:
        assert api.get("/models").status_code == 200
    spans = spans_until(receiver, lambda spans: with_parents(spans, [
        s for s in spans if s["scope"] == "opentelemetry.instrumentation.django"]))
    [view] = [s for s in spans if s["scope"] == "opentelemetry.instrumentation.django"]
    [server] = [s for s in spans if s["span_id"] == view["parent_id"]]
    assert (view["name"], view["kind"], view["trace_id"]) == (
        "GET v1/models", "internal", server["trace_id"])
    assert (server["name"], server["kind"], server["scope"]) == (
        "GET /v1/models", "server", "opentelemetry.instrumentation.asgi")


@pytest.mark.parametrize("environ, enabled", [
    ({}, False),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": ""}, False),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, True),
    ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, True),
    ({"OTEL_TRACES_EXPORTER": "console"}, True),
    ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"},
     False),
    ({"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"},
     False),
])
def test_tracing_is_off_unless_the_otel_variables_ask_for_it(environ, enabled):
    assert enabled_by_environment(environ) is enabled
