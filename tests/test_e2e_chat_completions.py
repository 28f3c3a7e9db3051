"""`POST /v1/chat/completions` end to end on the shared production deployment (Daphne, the
run queue's worker, Redis, Postgres), judged by the openai SDK's `chat.completions`
resources and helper, with the exact requests the fake upstream received."""
import json
import time

import httpx
import pytest
from openai import OpenAI

from tests.deployment_setup import provision, quota_counter
from tests.mcp_server import McpTestServer
from tests.upstream_scenarios import BAD_SHAPES

HELLO = "Hello, world! How can I help?"
UPSTREAM_EXTRAS = {"stream": True, "stream_options": {"include_usage": True}}


def upstream_bodies(upstream) -> list[dict]:
    return [r["body"] for r in upstream.requests() if r["path"] == "/v1/chat/completions"]


def test_create_not_streamed(openai_client, clean_upstream):
    completion = openai_client.chat.completions.create(
        model="fake-text", messages=[{"role": "user", "content": "hi"}],
        reasoning_effort=None, extra_body={"top_k": 5, "reasoning": {"effort": None},
                                           "chat_template_kwargs": {"thinking": False}})
    assert completion.id.startswith("chatcmpl-")
    assert completion.object == "chat.completion"
    assert completion.model == "fake-text"
    assert [c.model_dump(exclude_none=True) for c in completion.choices] == [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": HELLO}}]
    assert completion.usage.model_dump(exclude_none=True) == {
        "prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17,
        "completion_tokens_details": {"reasoning_tokens": 0},
        "prompt_tokens_details": {"cached_tokens": 4}}
    # passed on as sent, unknown fields kept; the all-null reasoning parameters stripped
    assert upstream_bodies(clean_upstream) == [{
        "model": "fake-text", "messages": [{"role": "user", "content": "hi"}], "top_k": 5,
        "chat_template_kwargs": {"thinking": False}, **UPSTREAM_EXTRAS}]


def test_reasoning_is_kept_as_the_backend_sent_it(openai_client):
    completion = openai_client.chat.completions.create(
        model="fake-reasoning", messages=[{"role": "user", "content": "hi"}])
    message = completion.choices[0].message
    assert message.content == "Hi there!"
    assert message.model_extra == {"reasoning_content": "Let me think. The user greets me."}
    assert completion.usage.completion_tokens_details.reasoning_tokens == 4


def test_create_streamed(openai_client, clean_upstream):
    chunks = list(openai_client.chat.completions.create(
        model="fake-text", messages=[{"role": "user", "content": "hi"}], stream=True,
        stream_options={"include_usage": True}))
    assert {(c.id, c.created, c.model) for c in chunks} == {(chunks[0].id, chunks[0].created,
                                                             "fake-text")}
    assert chunks[0].created != 1700000000  # the completion's, not the upstream's
    assert chunks[0].id.startswith("chatcmpl-")
    assert [c.choices[0].delta.content if c.choices else None for c in chunks] == [
        "", "Hello", ", world", "!", " How can I", " help?", None, None]
    assert [c.choices[0].finish_reason if c.choices else "usage" for c in chunks] == [
        None] * 6 + ["stop", "usage"]
    assert chunks[-1].usage.total_tokens == 17
    assert upstream_bodies(clean_upstream) == [{
        "model": "fake-text", "messages": [{"role": "user", "content": "hi"}],
        **UPSTREAM_EXTRAS}]


def test_stream_helper(openai_client):
    with openai_client.chat.completions.stream(
            model="fake-text", messages=[{"role": "user", "content": "hi"}]) as stream:
        deltas = [e.delta for e in stream if e.type == "content.delta"]
        final = stream.get_final_completion()
    assert deltas == ["", "Hello", ", world", "!", " How can I", " help?"]
    assert final.choices[0].message.content == HELLO
    assert final.choices[0].finish_reason == "stop"


def test_raw_stream_is_framed_at_the_edge(api):
    with api.stream("POST", "/chat/completions", json={
            "model": "fake-text", "messages": [{"role": "user", "content": "hi"}],
            "stream": True}) as response:
        raw = response.read()
    assert response.headers["content-type"] == "text/event-stream"
    blocks = raw.split(b"\n\n")
    assert blocks[-2:] == [b"data: [DONE]", b""]
    assert all(block.startswith(b"data: {") for block in blocks[:-2])
    assert len(blocks) == 2 + 7  # role, five deltas, finish; no usage chunk (not asked)


# --- stored chat completions --------------------------------------------------------------


def test_stored_completion_list_messages_update_delete(openai_client, production,
                                                       other_tenant_key):
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    first = openai_client.chat.completions.create(
        model="fake-text", messages=messages, store=True, metadata={"topic": "chat-store"})
    second = openai_client.chat.completions.create(
        model="fake-echo", messages=messages, store=True, metadata={"topic": "chat-store"})
    openai_client.chat.completions.create(model="fake-text", messages=messages,
                                          metadata={"topic": "chat-store"})  # not stored
    got = openai_client.chat.completions.retrieve(first.id)
    assert got.choices[0].message.content == HELLO
    assert got.metadata == {"topic": "chat-store"}
    listed = openai_client.chat.completions.list(metadata={"topic": "chat-store"})
    assert [c.id for c in listed.data] == [first.id, second.id]
    assert listed.has_more is False
    assert [c.id for c in openai_client.chat.completions.list(
        metadata={"topic": "chat-store"}, model="fake-echo").data] == [second.id]
    assert [c.id for c in openai_client.chat.completions.list(
        metadata={"topic": "chat-store"}, order="desc", limit=1).data] == [second.id]
    assert [c.id for c in openai_client.chat.completions.list(
        metadata={"topic": "chat-store"}, after=first.id).data] == [second.id]
    stored = openai_client.chat.completions.messages.list(first.id)
    assert [m.model_dump(exclude_none=True) for m in stored.data] == [
        {"id": f"{first.id}-0", "role": "system", "content": "Be brief."},
        {"id": f"{first.id}-1", "role": "user", "content": "hi"}]
    updated = openai_client.chat.completions.update(first.id, metadata={"topic": "moved"})
    assert updated.metadata == {"topic": "moved"}
    assert [c.id for c in openai_client.chat.completions.list(
        metadata={"topic": "chat-store"}).data] == [second.id]
    # tenant B: every route answers 404, as for an unknown id
    with production.client(other_tenant_key) as other:
        for method, path in [("GET", ""), ("GET", "/messages"), ("DELETE", "")]:
            answer = other.request(method, f"/chat/completions/{first.id}{path}")
            assert answer.status_code == 404
            assert answer.json() == {"error": {
                "message": f"No chat completion found with id '{first.id}'.",
                "type": "invalid_request_error", "param": None, "code": "not_found"}}
        assert other.post(f"/chat/completions/{first.id}",
                          json={"metadata": {"a": "b"}}).status_code == 404
        assert other.get("/chat/completions", params={
            "metadata[topic]": "chat-store"}).json()["data"] == []
    deleted = openai_client.chat.completions.delete(first.id)
    assert (deleted.id, deleted.deleted, deleted.object) == (
        first.id, True, "chat.completion.deleted")
    assert openai_client.chat.completions.list(metadata={"topic": "moved"}).data == []


# --- errors and repairs ---------------------------------------------------------------------


def test_errors_are_openai_shaped(api, production):
    missing = api.post("/chat/completions", json={"messages": [{"role": "user", "content": "x"}]})
    assert (missing.status_code, missing.json()) == (400, {"error": {
        "message": "Missing required parameter: 'model'.", "type": "invalid_request_error",
        "param": "model", "code": "missing_required_parameter"}})
    bad_json = api.post("/chat/completions", content=b"{nope")
    assert bad_json.status_code == 400
    assert bad_json.json()["error"]["code"] == "invalid_json"
    with httpx.Client(base_url=production.base_url) as anonymous:
        unauthorized = anonymous.post("/chat/completions", json={"model": "fake-text"})
    assert unauthorized.status_code == 401
    assert unauthorized.json()["error"]["code"] == "invalid_api_key"
    for stream in (False, True):
        limited = api.post("/chat/completions", json={
            "model": "fake-429", "stream": stream,
            "messages": [{"role": "user", "content": "x"}]})
        assert (limited.status_code, limited.headers["retry-after"]) == (429, "7")
        assert limited.json() == {"error": {
            "message": "Rate limit reached, please retry later.", "type": "rate_limit_exceeded",
            "param": None, "code": "rate_limit_exceeded"}}


def test_orphaned_and_duplicated_tool_messages_are_repaired(api, clean_upstream):
    call = {"id": "call_a", "type": "function",
            "function": {"name": "get_weather", "arguments": "{}"}}
    answer = api.post("/chat/completions", json={"model": "fake-text", "messages": [
        {"role": "user", "content": "weather?"},
        {"role": "tool", "tool_call_id": "call_orphan", "content": "lost"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_a", "content": "sunny"},
        {"role": "tool", "tool_call_id": "call_a", "content": "sunny again"},
        {"role": "user", "content": "thanks"}]})
    assert answer.status_code == 200
    assert upstream_bodies(clean_upstream)[0]["messages"] == [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": None, "tool_calls": [{
            "id": "call_orphan", "type": "function",
            "function": {"name": "function", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_orphan", "content": "lost"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_a", "content": "sunny"},
        {"role": "user", "content": "thanks"}]


# --- the tenant's MCP tools: the worker's tool loop ----------------------------------------

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather of a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}
CALC_TOOLS = ["calc__echo", "calc__sum", "calc__sleep", "calc__raise", "calc__large"]


@pytest.fixture(scope="module")
def agent(production):
    """A tenant with the MCP server `calc` registered (its tools offered to every chat
    completion of the tenant), and an SDK client with its key."""
    server = McpTestServer("calc").start()
    key = production.new_api_key("chat-agent")
    production.manage("shell", "-c", (
        "from mcp_tools.models import McpServer; from responses_app.models import Tenant; "
        "McpServer(tenant=Tenant.objects.get(name='chat-agent'), label='calc', "
        f"url='{server.url}').save()"))
    yield OpenAI(base_url=production.base_url, api_key=key, max_retries=0, timeout=30), server
    server.stop()


def call(call_id: str, name: str, arguments: str) -> dict:
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": arguments}}


AGENT_ASK = ('call calc__sum {"a": 1, "b": 2}\ncall calc__sum {"a": 3, "b": 4}\n'
             'call get_weather {"city": "Paris"}')


def agent_turns(user: dict) -> list[list[dict]]:
    """The exact message lists the upstream gets for AGENT_ASK: two MCP turns, then the turn
    that calls the client's function."""
    first = [user]
    second = first + [
        {"role": "assistant", "content": "Calling calc__sum.",
         "tool_calls": [call("call_0", "calc__sum", '{"a": 1, "b": 2}')]},
        {"role": "tool", "tool_call_id": "call_0", "content": "3"}]
    third = second + [
        {"role": "assistant", "content": "Calling calc__sum.",
         "tool_calls": [call("call_1", "calc__sum", '{"a": 3, "b": 4}')]},
        {"role": "tool", "tool_call_id": "call_1", "content": "7"}]
    return [first, second, third]


def test_mcp_tools_run_in_the_loop_then_the_clients_function_ends_it(agent, clean_upstream):
    client, server = agent
    user = {"role": "user", "content": AGENT_ASK}
    calls_before = server.stats["calls"]
    completion = client.chat.completions.create(
        model="fake-sequential-caller", messages=[user], tools=[WEATHER])
    bodies = upstream_bodies(clean_upstream)
    assert [body["messages"] for body in bodies] == agent_turns(user)
    assert [[t["function"]["name"] for t in body["tools"]] for body in bodies] == [
        ["get_weather", *CALC_TOOLS]] * 3
    assert server.stats["calls"] - calls_before == 2
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "Calling calc__sum.Calling calc__sum.Calling get_weather."
    assert [c.model_dump() for c in choice.message.tool_calls] == [
        call("call_2", "get_weather", '{"city": "Paris"}')]
    assert completion.usage.prompt_tokens == 36  # three turns of 12


def test_a_streaming_client_sees_each_mcp_call_as_it_happens(agent, production, clean_upstream):
    client, _ = agent
    user = {"role": "user", "content": AGENT_ASK}
    with httpx.Client(base_url=production.base_url, timeout=30,
                      headers={"Authorization": f"Bearer {client.api_key}"}) as api:
        with api.stream("POST", "/chat/completions", json={
                "model": "fake-sequential-caller", "messages": [user], "tools": [WEATHER],
                "stream": True, "stream_options": {"include_usage": True}}) as response:
            raw = response.read().decode()
    lines = [block for block in raw.split("\n\n") if block and not block.startswith(": keep")]
    comments = [line for line in lines if line.startswith(":")]
    assert comments == [
        ': mcp_call calc__sum {"a": 1, "b": 2}', ": mcp_call calc__sum completed: 3",
        ': mcp_call calc__sum {"a": 3, "b": 4}', ": mcp_call calc__sum completed: 7"]
    chunks = [json.loads(line[6:]) for line in lines if line.startswith("data: {")]
    assert [c["choices"][0]["delta"] if c["choices"] else "usage" for c in chunks] == [
        {"role": "assistant", "content": ""}, {"content": "Calling calc__sum."},
        {"content": "Calling calc__sum."}, {"content": "Calling get_weather."},
        {"tool_calls": [{"index": 0, **call("call_2", "get_weather", '{"city": "Paris"}')}]},
        {}, "usage"]
    assert [c["choices"][0]["finish_reason"] if c["choices"] else None for c in chunks] == [
        None] * 5 + ["tool_calls", None]
    assert chunks[-1]["usage"]["prompt_tokens"] == 36
    assert lines[-1] == "data: [DONE]"
    assert [body["messages"] for body in upstream_bodies(clean_upstream)] == agent_turns(user)


def test_the_iteration_limit_makes_the_model_answer_without_tools(agent, clean_upstream):
    client, server = agent
    user = {"role": "user", "content": 'call forever calc__echo {"text": "again"}'}
    completion = client.chat.completions.create(model="fake-sequential-caller",
                                                messages=[user])
    bodies = upstream_bodies(clean_upstream)
    turn = [{"role": "assistant", "content": "Calling calc__echo.",
             "tool_calls": [call(f"call_{i}", "calc__echo", '{"text": "again"}')]}
            for i in range(3)]
    result = [{"role": "tool", "tool_call_id": f"call_{i}", "content": "echo: again"}
              for i in range(3)]
    assert [body["messages"] for body in bodies] == [
        [user], [user, turn[0], result[0]], [user, turn[0], result[0], turn[1], result[1]],
        [user, turn[0], result[0], turn[1], result[1], turn[2], result[2]]]
    assert [body.get("tool_choice") for body in bodies] == [None, None, None, "none"]
    assert completion.choices[0].message.content == (
        "Calling calc__echo." * 3 + "No more tools after 3 results.")
    assert completion.choices[0].finish_reason == "stop"
    assert completion.choices[0].message.tool_calls is None


def test_the_clients_function_wins_a_name_an_mcp_tool_has(agent, clean_upstream):
    client, _ = agent
    mine = {"type": "function", "function": {"name": "calc__sum", "parameters": {}}}
    completion = client.chat.completions.create(
        model="fake-sequential-caller", tools=[mine],
        messages=[{"role": "user", "content": 'call calc__sum {"a": 1, "b": 1}'}])
    assert completion.choices[0].message.tool_calls[0].function.name == "calc__sum"
    assert completion.choices[0].finish_reason == "tool_calls"
    [body] = upstream_bodies(clean_upstream)
    assert [t["function"]["name"] for t in body["tools"]] == [
        "calc__sum", "calc__echo", "calc__sleep", "calc__raise", "calc__large"]
    assert body["tools"][0] == mine


# --- limits and usage ------------------------------------------------------------------------


def test_a_chat_completion_counts_against_the_same_quota_as_a_response(production):
    [key] = provision(production, {"chat-quota": {"keys": 1, "limits": {
        "monthly_token_budget": 30}}})["chat-quota"]
    chat = {"model": "fake-text", "messages": [{"role": "user", "content": "hi"}]}
    with production.client(key) as api:
        assert api.post("/responses", json={"model": "fake-text", "input": "hi"}
                        ).status_code == 200  # 17 tokens
        assert api.post("/chat/completions", json=chat).status_code == 200  # 17 more: 34
        refused = [api.post("/chat/completions", json=chat),
                   api.post("/responses", json={"model": "fake-text", "input": "hi"})]
        usage = api.get("/usage", params={"start_time": 0}).json()
    for answer in refused:
        assert answer.status_code == 429
        assert answer.json()["error"]["code"] == "insufficient_quota"
    results = [r for bucket in usage["data"] for r in bucket["results"]]
    assert [(r["num_model_requests"], r["input_tokens"], r["output_tokens"])
            for r in results] == [(2, 24, 10)]


# --- a framework that speaks Chat Completions -----------------------------------------------


@pytest.mark.parametrize("streaming", [False, True])
def test_langchain_chat_openai_runs_a_tool_loop(production, tenant_key, clean_upstream,
                                                streaming):
    from langchain_core.messages import HumanMessage, ToolMessage
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    @tool
    def get_weather(city: str) -> str:
        """The weather of a city."""
        return f"sunny in {city}"

    @tool
    def get_time(tz: str) -> str:
        """The time in a time zone."""
        return f"12:00 {tz}"

    tools = {"get_weather": get_weather, "get_time": get_time}
    model = ChatOpenAI(model="fake-sequential-caller", base_url=production.base_url,
                       api_key=tenant_key, use_responses_api=False, streaming=streaming,
                       max_retries=0).bind_tools(list(tools.values()))
    messages = [HumanMessage('call get_weather {"city": "Paris"}\ncall get_time {"tz": "UTC"}')]
    for _ in range(3):
        reply = model.invoke(messages)
        messages.append(reply)
        if not reply.tool_calls:
            break
        for call in reply.tool_calls:
            messages.append(ToolMessage(tools[call["name"]].invoke(call["args"]),
                                        tool_call_id=call["id"]))
    assert [(type(m).__name__, m.content) for m in messages[1:]] == [
        ("AIMessage", "Calling get_weather."), ("ToolMessage", "sunny in Paris"),
        ("AIMessage", "Calling get_time."), ("ToolMessage", "12:00 UTC"),
        ("AIMessage", "Results: sunny in Paris | 12:00 UTC")]
    assert [[t["function"]["name"] for t in body["tools"]]
            for body in upstream_bodies(clean_upstream)] == [["get_weather", "get_time"]] * 3


def _failed_whole_then_streamed(production, model: str, failed: dict):
    """`model` asked for a whole completion (a 502 with `failed`), then streamed: the
    stream's SSE blocks and the tenant's usage today."""
    [key] = provision(production, {f"chat-{model}": {"keys": 1, "limits": {}}})[f"chat-{model}"]
    with production.client(key) as api:
        whole = api.post("/chat/completions", json={
            "model": model, "messages": [{"role": "user", "content": "hi"}]})
        assert (whole.status_code, whole.json()) == (502, failed)
        with api.stream("POST", "/chat/completions", json={
                "model": model, "stream": True,
                "messages": [{"role": "user", "content": "hi"}]}) as response:
            blocks = [b for b in response.read().split(b"\n\n") if b]
        return blocks, todays_usage(api, model)


@pytest.mark.parametrize("model, message", [
    ("fake-drop", "The upstream connection failed mid-stream: the upstream closed the connection"),
    ("fake-bad-chunk", "The upstream sent a malformed stream chunk."),
    *[(f"fake-bad-shape-{kind}{apart}", "The upstream sent a malformed stream chunk.")
      for kind in BAD_SHAPES for apart in ("", "-apart")],
])
def test_an_upstream_failing_mid_stream(production, clean_upstream, model, message):
    """The upstream's stream breaks (or turns malformed) after `Hello`: a client waiting for
    the whole completion gets the error; a streaming one gets the role chunk and `Hello`,
    then the error, and the tenant is charged each call as a cut one (the route's estimate
    of the request as rendered, and of `Hello` for the streamed call). fake-bad-chunk sends
    the role chunk, `Hello` and the malformed chunk in one write (one read): before, the
    malformed chunk failed its whole read, and the client got the error alone.
    fake-bad-shape-*: the bad chunk is JSON of the wrong shape (in the same read, or in one
    of its own after the first delta's): before, it crashed the run (the generic error, and
    the call charged nothing); fake-bad-shape-*-deep's is nested deeper than orjson writes
    (before, writing it crashed the streamed run, by the text lane or not)."""
    from upstreams.token_counting import render_chat

    failed = {"error": {"message": message, "type": "server_error", "param": None,
                        "code": "server_error"}}
    blocks, usage = _failed_whole_then_streamed(production, model, failed)
    assert [json.loads(b[6:])["choices"][0]["delta"] for b in blocks[:-1]] == [
        {"role": "assistant", "content": ""}, {"content": "Hello"}]
    assert json.loads(blocks[-1][6:]) == failed
    first, second = upstream_bodies(clean_upstream)
    assert second == first  # the same upstream call, streamed either way
    cut_input = estimated(render_chat(first))
    assert usage == [(2, 2 * cut_input, 2 * estimated("Hello"))]


def test_a_call_index_of_another_type_fails_the_completion(production, clean_upstream):
    """A second tool call whose index is a string (the first's an integer: before, the
    calls' sort at the end crashed the run): the client waiting for the whole completion
    gets the malformed chunk's error; a streaming one gets the role chunk and the first
    call's head, then the error; each call is charged as a cut one (the route's estimate of
    the request and of the arguments streamed)."""
    from upstreams.token_counting import render_chat

    model = "fake-bad-shape-call-index-mixed"
    failed = {"error": {"message": "The upstream sent a malformed stream chunk.",
                        "type": "server_error", "param": None, "code": "server_error"}}
    blocks, usage = _failed_whole_then_streamed(production, model, failed)
    assert [json.loads(b[6:])["choices"][0]["delta"] for b in blocks[:-1]] == [
        {"role": "assistant", "content": ""},
        {"tool_calls": [{"index": 0, "id": "call_a", "type": "function",
                         "function": {"name": "look", "arguments": '{"q": 1}'}}]}]
    assert json.loads(blocks[-1][6:]) == failed
    first, second = upstream_bodies(clean_upstream)
    assert second == first
    assert usage == [(2, 2 * estimated(render_chat(first)), 2 * estimated('{"q": 1}'))]


def test_a_client_leaving_stops_an_unstored_run_and_a_stored_one_goes_on(
        api, openai_client, clean_upstream):
    def leave_after_five_chunks(store: bool) -> str:
        with api.stream("POST", "/chat/completions", json={
                "model": "bench-400-10", "stream": True, "store": store,
                "messages": [{"role": "user", "content": "hi"}]}) as response:
            chunks = []
            for line in response.iter_lines():
                if line.startswith("data: "):
                    chunks.append(json.loads(line[6:]))
                if len(chunks) == 5:
                    break
        return chunks[0]["id"]

    leave_after_five_chunks(store=False)
    wait_for(lambda: clean_upstream.stats()["disconnects"] == 1)
    assert clean_upstream.stats()["completed"] == 0
    stored_id = leave_after_five_chunks(store=True)
    wait_for(lambda: clean_upstream.stats()["completed"] == 1)
    completion = openai_client.chat.completions.retrieve(stored_id)
    assert completion.choices[0].message.content == "".join(f"w{i} " for i in range(400))
    assert clean_upstream.stats()["disconnects"] == 1


def estimated(text: str) -> int:
    """The route's estimate of a text's tokens (UTF-8 bytes / 4, rounded up)."""
    return -(-len(text.encode()) // 4)


def todays_usage(api, model: str) -> list[tuple[int, int, int]]:
    """(requests, input tokens, output tokens) of the tenant's usage of `model` today."""
    results = api.get("/usage").json()["data"][-1]["results"]
    return [(r["num_model_requests"], r["input_tokens"], r["output_tokens"])
            for r in results if r["model"] == model]


def test_a_tool_loop_failing_mid_stream_is_charged_every_upstream_call(
        agent, production, clean_upstream):
    """The answer after an MCP call breaks after `Results: ` (no usage chunk): the client
    gets the error event, and the tenant's usage rows are charged the first call's reported
    usage (12 + 2) plus the broken call's, counted as a cut Responses call is (the route's
    estimate of the request as rendered, and of what it generated). Before, a failed chat
    run was charged nothing."""
    from upstreams.token_counting import render_chat

    client, _ = agent
    model = "fake-tool-caller-drop"
    with production.client(client.api_key) as api:
        with api.stream("POST", "/chat/completions", json={
                "model": model, "stream": True, "messages": [
                    {"role": "user", "content": 'call calc__echo {"text": "hi"}'}]}) as response:
            blocks = [b for b in response.read().split(b"\n\n") if b]
        usage = todays_usage(api, model)
    assert json.loads(blocks[-1][6:])["error"]["message"] == (
        "The upstream connection failed mid-stream: the upstream closed the connection")
    first, second = upstream_bodies(clean_upstream)
    assert second["messages"][-1] == {"role": "tool", "tool_call_id": "call_0",
                                      "content": "echo: hi"}
    cut_input, cut_output = estimated(render_chat(second)), estimated("Results: ")
    assert usage == [(1, 12 + cut_input, 2 + cut_output)]


def test_an_unstored_run_whose_client_left_is_charged_its_cut_call(production, clean_upstream):
    """A `store: false` stream whose client leaves while the upstream holds after `w0 w1 w2 `
    is stopped, and charged (usage rows, quota counter) its cut call as a cancelled response
    is: the route's estimate of the request as rendered and of `w0 w1 w2 ` (no usage chunk
    came). Before, nothing."""
    from upstreams.token_counting import render_chat

    [key] = provision(production, {"chat-left-usage": {
        "keys": 1, "limits": {"monthly_token_budget": 1_000_000}}})["chat-left-usage"]
    model = f"bench-10-1-held3-{time.time_ns()}"
    with production.client(key) as api:
        with api.stream("POST", "/chat/completions", json={
                "model": model, "stream": True, "store": False,
                "messages": [{"role": "user", "content": "hi"}]}) as response:
            deltas = []
            for line in response.iter_lines():
                if line.startswith("data: "):
                    deltas.append(json.loads(line[6:])["choices"][0]["delta"]["content"])
                if len(deltas) == 3:
                    break
        wait_for(lambda: clean_upstream.stats()["disconnects"] == 1)
        clean_upstream.release(model)
        wait_for(lambda: todays_usage(api, model) != [])
        usage = todays_usage(api, model)
    assert deltas == ["w0 ", "w1 ", "w2 "]
    [sent] = upstream_bodies(clean_upstream)
    cut_input, cut_output = estimated(render_chat(sent)), estimated("w0 w1 w2 ")
    assert usage == [(1, cut_input, cut_output)]
    assert quota_counter(production, "chat-left-usage") == cut_input + cut_output


def wait_for(condition, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_keep_alives_flow_while_an_mcp_call_runs(agent, production):
    client, _ = agent
    with httpx.Client(base_url=production.base_url, timeout=30,
                      headers={"Authorization": f"Bearer {client.api_key}"}) as api:
        with api.stream("POST", "/chat/completions", json={
                "model": "fake-sequential-caller", "stream": True, "messages": [
                    {"role": "user", "content": 'call calc__sleep {"seconds": 1.3}'}]}) as response:
            raw = response.read().decode()
    comments = []
    for block in raw.split("\n\n"):  # consecutive keep-alives as one (their number is timing)
        if block.startswith(":") and not (comments and block == comments[-1] == ": keep-alive"):
            comments.append(block)
    assert comments == [': mcp_call calc__sleep {"seconds": 1.3}', ": keep-alive",
                        ": mcp_call calc__sleep completed: slept 1.3"]
    assert raw.endswith("data: [DONE]\n\n")
