"""End to end on the production path (Daphne + Celery + Redis + Postgres): every stream
through the SSE framing check, both schema oracles and the invariant checker."""
import httpx
import pytest

from tests.oracles import check_sse_stream, validate_response
from tests.sse import parse_sse
from tests.upstream_scenarios import BAD_SHAPES, SCENARIOS, text_of

TEXT = text_of(SCENARIOS["fake-text"])

TEXT_EVENTS = [
    "response.created", "response.in_progress",
    "response.output_item.added", "response.content_part.added",
    *["response.output_text.delta"] * 5,
    "response.output_text.done", "response.content_part.done", "response.output_item.done",
    "response.completed",
]


def stream(api, body) -> tuple[httpx.Response, bytes]:
    with api.stream("POST", "/responses", json={**body, "stream": True}) as response:
        raw = response.read()
    return response, raw


def test_it_streams_text_in_protocol_order(api, clean_upstream):
    response, raw = stream(api, {"model": "fake-text", "input": "hi"})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["cache-control"] == "no-cache"
    assert response.headers["x-accel-buffering"] == "no"
    events, final = check_sse_stream(raw)
    assert [e["type"] for e in events] == TEXT_EVENTS
    assert final["output"][0]["content"][0]["text"] == TEXT
    assert final["usage"]["total_tokens"] == final["usage"]["input_tokens"] + final["usage"]["output_tokens"]
    sent = clean_upstream.requests()[-1]["body"]
    assert sent["stream"] is True
    assert sent["stream_options"] == {"include_usage": True}
    assert sent["messages"] == [{"role": "user", "content": "hi"}]


def test_retrieve_returns_the_final_event_response(api):
    _, raw = stream(api, {"model": "fake-reasoning", "input": "hi", "metadata": {"k": "v"}})
    events, final = check_sse_stream(raw)
    fetched = api.get(f"/responses/{final['id']}")
    assert fetched.status_code == 200
    assert fetched.json() == final
    validate_response(fetched.json())
    assert [item["type"] for item in final["output"]] == ["reasoning", "message"]
    assert final["usage"]["output_tokens_details"]["reasoning_tokens"] == (
        SCENARIOS["fake-reasoning"].chunks[-1]["usage"]["completion_tokens_details"]["reasoning_tokens"])


def test_a_nul_from_the_upstream_is_replaced_and_the_response_stored(api):
    """Postgres cannot hold NUL: the upstream's becomes U+FFFD, in the stream as in the stored
    response (before, the response failed: "The response could not be stored.")."""
    _, raw = stream(api, {"model": "fake-nul", "input": "hi"})
    events, final = check_sse_stream(raw)
    assert final["status"] == "completed"
    assert [e["delta"] for e in events if e["type"] == "response.output_text.delta"] == [
        "a\ufffdb", " \\u0000 stays"]
    reasoning, message = final["output"]
    assert reasoning["content"][0]["text"] == "Hm\ufffdm."
    assert message["content"][0]["text"] == "a\ufffdb \\u0000 stays"
    assert api.get(f"/responses/{final['id']}").json() == final


@pytest.mark.parametrize("model, status, types", [
    ("fake-tools", "completed", ["function_call", "function_call"]),
    ("fake-tool-one-piece", "completed", ["function_call", "function_call"]),
    ("fake-text-then-tool", "completed", ["message", "function_call"]),
    ("fake-refusal", "completed", ["message"]),
    ("fake-json", "completed", ["message"]),
    ("fake-length", "incomplete", ["message"]),
])
def test_every_scenario_passes_the_oracles(api, model, status, types):
    _, raw = stream(api, {"model": model, "input": "hi"})
    events, final = check_sse_stream(raw)
    assert final["status"] == status
    assert [item["type"] for item in final["output"]] == types
    assert api.get(f"/responses/{final['id']}").json() == final


def test_parallel_tool_calls_keep_upstream_call_ids(api):
    _, raw = stream(api, {"model": "fake-tools", "input": "weather and time?"})
    events, final = check_sse_stream(raw)
    calls = [(i["call_id"], i["name"], i["arguments"]) for i in final["output"]]
    assert calls == [("call_abc", "get_weather", '{"city": "Paris"}'),
                     ("call_def", "get_time", '{"tz": "Europe/Paris"}')]


def test_length_finish_is_incomplete_max_output_tokens(api):
    _, raw = stream(api, {"model": "fake-length", "input": "hi", "max_output_tokens": 5})
    events, final = check_sse_stream(raw)
    assert events[-1]["type"] == "response.incomplete"
    assert final["incomplete_details"] == {"reason": "max_output_tokens"}
    assert final["output"][0]["status"] == "incomplete"


FAILED_AFTER_HELLO = [
    "response.created", "response.in_progress",
    "response.output_item.added", "response.content_part.added",
    "response.output_text.delta",
    "response.output_text.done", "response.content_part.done", "response.output_item.done",
    "response.failed",
]

def cut_call_usage(clean_upstream, output_tokens: int) -> dict:
    """The usage of the one upstream call made, counted as a cut one: the route's estimate
    (UTF-8 bytes / 4, rounded up) of the request as rendered, and `output_tokens`."""
    from upstreams.token_counting import render_chat

    [sent] = [r["body"] for r in clean_upstream.requests()]
    cut_input = -(-len(render_chat(sent).encode()) // 4)
    return {"input_tokens": cut_input,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": cut_input + output_tokens}



@pytest.mark.parametrize("model, message", [
    ("fake-drop", "The upstream connection failed mid-stream: the upstream closed the connection"),
    ("fake-bad-chunk", "The upstream sent a malformed stream chunk."),
    *[(f"fake-bad-shape-{kind}{apart}", "The upstream sent a malformed stream chunk.")
      for kind in BAD_SHAPES for apart in ("", "-apart")],
])
def test_mid_stream_failure_is_response_failed_and_stored_failed(api, model, message,
                                                                 clean_upstream):
    """The stream breaks (or turns malformed) after `Hello`, with no usage chunk: `Hello`
    is streamed and kept in the failed response's output, and the call is counted as a cut
    one is (the route's estimate: UTF-8 bytes / 4 of the request as rendered, and of
    `Hello`), in `response.failed` and the stored response. fake-bad-chunk sends the role
    chunk, `Hello` and the malformed chunk in one write (one read): before, the malformed
    chunk failed its whole read, and `Hello` was lost (output [], 0 output tokens).
    fake-bad-shape-*: the bad chunk is JSON of the wrong shape (in the same read, or in one
    of its own after the first delta's): before, it crashed the run (the generic error, and
    the cut call uncounted); fake-bad-shape-*-deep's is nested deeper than orjson writes
    (in a key the translation does not read: before, the response completed)."""
    _, raw = stream(api, {"model": model, "input": "hi"})
    events, final = check_sse_stream(raw)
    assert [e["type"] for e in events] == FAILED_AFTER_HELLO
    assert [e["delta"] for e in events if e["type"] == "response.output_text.delta"] == [
        "Hello"]
    assert final["status"] == "failed"
    assert final["error"] == {"code": "server_error", "message": message}
    assert [(item["type"], item["status"], [part["text"] for part in item["content"]])
            for item in final["output"]] == [("message", "incomplete", ["Hello"])]
    stored = api.get(f"/responses/{final['id']}").json()
    assert stored == final
    assert final["usage"] == cut_call_usage(clean_upstream, output_tokens=2)


@pytest.mark.parametrize("apart", ["", "-apart"])
def test_a_call_index_of_another_type_fails_after_the_call_before_it(api, apart,
                                                                     clean_upstream):
    """A second tool call whose index is a string (the first's an integer: before, the
    calls' sort at the turn's end crashed the run): the response fails as for a malformed
    chunk, after the first call's events, that call closed incomplete with the arguments it
    streamed, the cut call counted (the route's estimate of the request and of them)."""
    _, raw = stream(api, {"model": f"fake-bad-shape-call-index-mixed{apart}", "input": "hi"})
    events, final = check_sse_stream(raw)
    assert [e["type"] for e in events] == [
        "response.created", "response.in_progress", "response.output_item.added",
        "response.function_call_arguments.delta", "response.function_call_arguments.done",
        "response.output_item.done", "response.failed"]
    assert (final["status"], final["error"]) == ("failed", {
        "code": "server_error", "message": "The upstream sent a malformed stream chunk."})
    [call] = final["output"]
    assert (call["type"], call["status"], call["name"], call["call_id"], call["arguments"]) == (
        "function_call", "incomplete", "look", "call_a", '{"q": 1}')
    assert api.get(f"/responses/{final['id']}").json() == final
    assert final["usage"] == cut_call_usage(clean_upstream, output_tokens=2)


@pytest.mark.parametrize("stream_flag", [True, False])
@pytest.mark.parametrize("model, status, code", [
    ("fake-429", 429, "rate_limit_exceeded"),
    ("fake-500", 502, "upstream_error"),
    ("fake-400", 400, "upstream_invalid_request"),
])
def test_upstream_failure_before_start_maps_status(api, model, status, code, stream_flag):
    response = api.post("/responses", json={"model": model, "input": "hi", "stream": stream_flag})
    assert response.status_code == status
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert set(body["error"]) == {"message", "type", "param", "code"}
    assert body["error"]["code"] == code
    if status == 429:
        assert response.headers["retry-after"] == "7"


def test_slow_first_byte_gets_keepalive_comments(api):
    _, raw = stream(api, {"model": "fake-slow", "input": "hi"})
    parsed = parse_sse(raw)
    # the fake upstream waits 2.5 s before its first chunk; the gateway sends `: keep-alive`
    # every second while nothing flows (SSE_KEEPALIVE_SECONDS=1 in this deployment)
    assert parsed.keepalives in (2, 3)
    events, final = check_sse_stream(raw)
    assert final["output"][0]["content"][0]["text"] == TEXT


def test_non_streaming_create_returns_the_full_response(api):
    response = api.post("/responses", json={"model": "fake-text", "input": "hi"})
    assert response.status_code == 200
    body = response.json()
    validate_response(body)
    assert body["status"] == "completed"
    assert body["output"][0]["content"][0]["text"] == TEXT
    assert api.get(f"/responses/{body['id']}").json() == body


def test_non_streaming_mid_stream_failure_is_an_error_and_stored(api):
    response = api.post("/responses", json={"model": "fake-drop", "input": "hi"})
    assert response.status_code == 502
    error = response.json()["error"]
    assert error["code"] == "server_error"
    response_id = error["message"].split()[1]
    assert api.get(f"/responses/{response_id}").json()["status"] == "failed"


def test_models_lists_the_upstream_models(api, upstream):
    body = api.get("/models").json()
    assert body["object"] == "list"
    assert [m["id"] for m in body["data"]] == [m["id"] for m in httpx.get(f"{upstream.base_url}/models").json()["data"]]
