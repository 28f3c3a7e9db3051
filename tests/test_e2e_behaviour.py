"""What real clients send and need, and how runs end when the client or upstream stalls."""
import time

from tests.invariants import check_stream
from tests.oracles import check_sse_stream, validate_event, validate_response
from tests.sse import parse_sse


def test_codex_style_request_is_accepted_and_translated(api, clean_upstream):
    """store=false, the whole history, client ids, echoed items, namespace and hosted tools."""
    body = {
        "model": "fake-reasoning", "stream": True, "store": False,
        "include": ["reasoning.encrypted_content"], "reasoning": {"summary": "auto"},
        "parallel_tool_calls": True, "prompt_cache_key": "cache-1",
        "client_metadata": {"session": "abc"}, "tool_choice": "auto",
        "tools": [
            {"type": "function", "name": "shell", "strict": False,
             "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}},
            {"type": "namespace", "name": "fs", "description": "files", "tools": [
                {"type": "function", "name": "read", "strict": False,
                 "parameters": {"type": "object", "properties": {}}}]},
            {"type": "web_search", "external_web_access": False},
        ],
        "input": [
            {"type": "message", "role": "developer", "id": "msg_dev-uuid",
             "content": [{"type": "input_text", "text": "You are Codex."}]},
            {"type": "message", "role": "user", "id": "msg_user-uuid",
             "content": [{"type": "input_text", "text": "list files"}]},
            {"type": "reasoning", "id": "rs_prev", "summary": [], "content": None,
             "encrypted_content": "not-a-token-of-ours"},
            {"type": "function_call", "id": "fc_ours", "status": "completed", "call_id": "call_1",
             "name": "read", "namespace": "fs", "arguments": "{}"},
            {"type": "function_call_output", "id": "fco_client-uuid", "call_id": "call_1",
             "output": "a.txt"},
            {"type": "message", "role": "user", "id": "msg_user-uuid",
             "content": [{"type": "input_text", "text": "and again"}]},
        ],
    }
    with api.stream("POST", "/responses", json=body) as response:
        assert response.status_code == 200
        raw = response.read()
    events, final = check_sse_stream(raw)
    reasoning = final["output"][0]
    assert reasoning["type"] == "reasoning"
    assert reasoning["summary"] == [{"type": "summary_text",
                                     "text": "Let me think. The user greets me."}]
    assert reasoning["encrypted_content"]
    sent = clean_upstream.requests()[-1]["body"]
    assert [t["function"]["name"] for t in sent["tools"]] == ["shell", "fs__read"]
    assert sent["messages"] == [
        {"role": "system", "content": "You are Codex."},
        {"role": "user", "content": "list files"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "fs__read", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "a.txt"},
        {"role": "user", "content": "and again"},
    ]
    assert api.get(f"/responses/{final['id']}").status_code == 404


def test_sealed_reasoning_comes_back_readable(api):
    first = api.post("/responses", json={"model": "fake-reasoning", "input": "hi", "store": False,
                                         "include": ["reasoning.encrypted_content"]}).json()
    reasoning = first["output"][0]
    echoed = {**reasoning, "content": None}
    follow = api.post("/responses", json={"model": "fake-text", "input": [
        {"role": "user", "content": "hi"}, echoed, {"role": "user", "content": "more"}]})
    assert follow.status_code == 200
    items = api.get(f"/responses/{follow.json()['id']}/input_items",
                    params={"order": "asc"}).json()["data"]
    assert items[1]["content"] == reasoning["content"]
    assert items[1]["content"][0]["text"] == "Let me think. The user greets me."


def test_an_upstream_that_stalls_fails_with_request_timeout(api):
    # the fake upstream answers headers, then sends nothing for 7 s; UPSTREAM_TIMEOUT is 5 s
    with api.stream("POST", "/responses", json={"model": "fake-slow-7000", "input": "hi",
                                                "stream": True}) as response:
        raw = response.read()
    events = parse_sse(raw).events
    # the openai SDK's ResponseError.code is a closed list without PROTOCOL's
    # "request_timeout", so the terminal event is checked against Open Responses only
    for event in events[:-1]:
        validate_event(event)
    final = check_stream(events)
    assert [e["type"] for e in events] == ["response.created", "response.in_progress",
                                           "response.failed"]
    assert final["error"] == {"code": "request_timeout",
                              "message": "The upstream sent nothing for longer than the timeout."}
    assert api.get(f"/responses/{final['id']}").json()["status"] == "failed"


def test_a_client_that_disconnects_does_not_stop_a_stored_run(api):
    with api.stream("POST", "/responses", json={"model": "bench-40-25", "input": "hi",
                                                "stream": True}) as response:
        lines = response.iter_lines()
        assert next(lines) == "event: response.created"
        data = next(lines)
    response_id = data.split('"id":"', 1)[1].split('"', 1)[0]
    deadline = time.monotonic() + 15
    stored = api.get(f"/responses/{response_id}").json()
    assert stored["status"] == "in_progress"
    while stored["status"] == "in_progress" and time.monotonic() < deadline:
        time.sleep(0.2)
        stored = api.get(f"/responses/{response_id}").json()
    assert stored["status"] == "completed"
    assert stored["output"][0]["content"][0]["text"] == "".join(f"w{i} " for i in range(40))
    validate_response(stored)
