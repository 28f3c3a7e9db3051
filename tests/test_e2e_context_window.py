"""Long sessions on the production path, the run's side: truncation and
context_length_exceeded against a route's window, server-side compaction
(context_management) streamed first, its summary call cancelled or broken mid-stream (closed,
and counted once), and the Agents SDK's compaction session, with the exact requests the fake
upstream received (the deployment: tests/context_deployment.py). A count that fails and a
run that crashes in its context phase: test_e2e_context_failures.py."""
import time

import pytest

from responses_app.context.compaction_items import COMPACTION_PREFIX
from responses_app.context.summary import COMPACTION_PROMPT
from tests.context_deployment import (  # noqa: F401  (fixtures)
    api, chats, is_unfinished_here, keys, stored_rows, summary_of, user, windowed)
from tests.oracles import check_sse_stream
from tests.upstream_scenarios import render_messages


# --- truncation and the window (fake-text: 40 tokens) ------------------------------------

LONG_INPUT = [
    user("alpha " * 9 + "alpha"),  # user: + 10 words
    {"role": "assistant", "content": "beta " * 9 + "beta"},
    {"type": "function_call", "call_id": "c1", "name": "look", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "c1", "output": "gamma gamma gamma gamma gamma"},
    user("final question now"),
]  # 3 (instructions) + 11 + 11 + 2 + 6 + 4 = 37 tokens


def test_auto_truncation_drops_the_oldest_messages_and_a_call_with_its_output(
        api, clean_upstream):
    reply = api.post("/responses", json={
        "model": "fake-text", "instructions": "be brief", "input": LONG_INPUT,
        "truncation": "auto", "max_output_tokens": 20})  # 20 tokens left for the input
    assert reply.status_code == 200
    assert reply.json()["truncation"] == "auto"
    sent = chats(clean_upstream)
    assert [m for m in sent[0]["messages"]] == [
        {"role": "system", "content": "be brief"}, user("final question now")]
    counts = [r["body"] for r in clean_upstream.requests() if r["path"] == "/tokenize"]
    assert len(counts) == 3  # the whole, then after each of the two cuts


def test_auto_truncation_keeps_what_fits(api, clean_upstream):
    reply = api.post("/responses", json={
        "model": "fake-text", "instructions": "be brief", "input": LONG_INPUT,
        "truncation": "auto", "max_output_tokens": 10})  # 30 left: the first message goes
    assert reply.status_code == 200
    assert chats(clean_upstream)[0]["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "assistant", "content": "beta " * 9 + "beta", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "look", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "gamma gamma gamma gamma gamma"},
        user("final question now")]


def test_over_the_window_without_truncation_is_context_length_exceeded(
        windowed, api, clean_upstream):
    before = stored_rows(windowed)
    reply = api.post("/responses", json={
        "model": "fake-text", "instructions": "be brief", "input": LONG_INPUT,
        "max_output_tokens": 10, "stream": True})
    assert (reply.status_code, reply.json()) == (400, {"error": {
        "message": "Your input exceeds the context window of this model: 37 input tokens, "
                   "and the window of 40 tokens leaves 30 for the input. Please adjust your "
                   "input and try again, or use truncation: 'auto'.",
        "type": "invalid_request_error", "param": "input",
        "code": "context_length_exceeded"}})
    assert chats(clean_upstream) == []  # the upstream was never asked
    assert stored_rows(windowed) == before


def test_a_background_response_over_the_window_fails_with_context_length_exceeded(
        api, clean_upstream):
    import time

    created = api.post("/responses", json={
        "model": "fake-text", "instructions": "be brief", "input": LONG_INPUT,
        "max_output_tokens": 10, "background": True}).json()
    deadline = time.monotonic() + 20
    while (resource := api.get(f"/responses/{created['id']}").json())["status"] in (
            "queued", "in_progress") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (resource["status"], resource["error"]) == ("failed", {
        "code": "context_length_exceeded",
        "message": "Your input exceeds the context window of this model: 37 input tokens, "
                   "and the window of 40 tokens leaves 30 for the input. Please adjust your "
                   "input and try again, or use truncation: 'auto'."})
    assert chats(clean_upstream) == []


# --- server-side compaction (context_management) -----------------------------------------

@pytest.mark.parametrize("threshold", [0, -5, "10"])
def test_a_bad_compact_threshold_is_a_400(api, threshold):
    reply = api.post("/responses", json={"model": "fake-echo", "input": "x",
                                         "context_management": [
                                             {"type": "compaction",
                                              "compact_threshold": threshold}]})
    assert (reply.status_code, reply.json()) == (400, {"error": {
        "message": "Invalid 'context_management[0].compact_threshold': expected an integer "
                   "greater than or equal to 1.", "type": "invalid_request_error",
        "param": "context_management[0].compact_threshold", "code": "invalid_value"}})


def test_crossing_the_threshold_compacts_first_and_streams_the_compaction(
        api, clean_upstream):
    first = api.post("/responses", json={"model": "fake-echo",
                                         "input": "one two three four five"}).json()
    history = [user("one two three four five"),
               {"role": "assistant", "content": "user: one two three four five"}, user("six")]
    clean_upstream.clear()
    reply = api.post("/responses", json={
        "model": "fake-echo", "input": "six", "previous_response_id": first["id"],
        "stream": True, "context_management": [{"type": "compaction",
                                                "compact_threshold": 10}]})
    events, final = check_sse_stream(reply.content)
    assert [e["type"] for e in events[:5]] == [
        "response.created", "response.in_progress", "response.output_item.added",
        "response.compaction.compacting", "response.output_item.done"]
    compaction = events[4]["item"]
    assert compaction["type"] == "compaction" and compaction["encrypted_content"]
    assert [i["type"] for i in final["output"]] == ["compaction", "message"]
    summary = summary_of(history)
    bodies = [(r["path"], r["body"]) for r in clean_upstream.requests()]
    assert bodies[0] == ("/tokenize", {"model": "fake-echo", "add_generation_prompt": True,
                                       "messages": history})  # 15 tokens > 10
    assert bodies[1] == ("/v1/chat/completions", {  # streamed, as a turn
        "model": "fake-echo", "stream": True, "stream_options": {"include_usage": True},
        "messages": [*history, user(COMPACTION_PROMPT)]})
    assert bodies[2][0] == "/tokenize"
    assert bodies[3][1]["messages"] == [
        {"role": "system", "content": COMPACTION_PREFIX + summary}, user("six")]
    answer = final["output"][1]["content"][0]["text"]
    assert final["usage"] == usage(12 + 12, 3 + 3)  # the summary's usage chunk, the answer's

    clean_upstream.clear()  # the chain goes on from the compaction, without context_management
    api.post("/responses", json={"model": "fake-echo", "input": "seven",
                                 "previous_response_id": final["id"]})
    assert chats(clean_upstream)[0]["messages"] == [
        {"role": "system", "content": COMPACTION_PREFIX + summary}, user("six"),
        {"role": "assistant", "content": answer}, user("seven")]


def usage(input_tokens: int, output_tokens: int) -> dict:
    return {"input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": output_tokens, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input_tokens + output_tokens}


def estimated(summary_body: dict, generated: str) -> dict:
    """The usage of a summary call cut before its usage chunk, as the default route counts
    it (its estimate: UTF-8 bytes / 4 of the request as rendered, and of what it wrote)."""
    from upstreams.token_counting import render_chat

    return usage(-(-len(render_chat(summary_body).encode()) // 4),
                 -(-len(generated.encode()) // 4))


def test_a_cancel_while_the_summary_streams_closes_it_and_counts_it(api, clean_upstream):
    """Cancelled while the compaction's summary streams (held after its first chunk,
    `w0 `): its connection is closed at once, the response ends cancelled, and its usage
    is the summary call's, counted as a cut turn's (no usage chunk came). Its compaction
    item is closed as the stream's other open items are, unfinished; a continuation sends
    the whole history, as if that compaction never began (the chain's walk goes past it,
    to the response before it)."""
    from tests.invariants import check_cancelled_stream
    from tests.test_e2e_durable import cancelled_mid_stream, wait_for

    first = api.post("/responses", json={"model": "fake-echo", "input": "alpha"}).json()
    earlier = [user("alpha"), {"role": "assistant", "content": "user: alpha"}]
    clean_upstream.clear()
    held = f"bench-4-1-held1-summary{time.time_ns()}"
    body = {"model": held, "background": True, "stream": True,
            "previous_response_id": first["id"],
            "input": [user("remember the alpha plan"), {"type": "compaction_trigger"}]}

    def summary_streaming(event: dict) -> bool:
        if event["type"] != "response.compaction.compacting":
            return False
        return wait_for(lambda: clean_upstream.stats()["in_flight"] == 1, "the summary stream")

    response_id, cancelled, events = cancelled_mid_stream(api, body, summary_streaming)
    wait_for(lambda: clean_upstream.stats()["disconnects"] == 1, "the upstream to see the close")
    clean_upstream.release(held)
    summary_body = {"model": held, "stream": True, "stream_options": {"include_usage": True},
                    "messages": [*earlier, user("remember the alpha plan"),
                                 user(COMPACTION_PROMPT)]}
    assert chats(clean_upstream) == [summary_body]  # and no turn after it
    assert clean_upstream.stats()["completed"] == 0
    assert [e["type"] for e in events] == [
        "response.created", "response.in_progress", "response.output_item.added",
        "response.compaction.compacting", "response.output_item.done"]
    stored = api.get(f"/responses/{response_id}").json()
    assert check_cancelled_stream(events) == cancelled["output"] == stored["output"]
    assert_unfinished(events[2]["item"], events[4])
    assert cancelled["status"] == stored["status"] == "cancelled"
    assert cancelled["usage"] == stored["usage"] == estimated(summary_body, "w0 ")
    assert stored["usage"]["output_tokens"] == 1

    clean_upstream.clear()
    api.post("/responses", json={"model": "fake-echo", "input": "go on",
                                 "previous_response_id": response_id})
    assert chats(clean_upstream) == [{
        "model": "fake-echo", "stream": True, "stream_options": {"include_usage": True},
        "messages": [*earlier, user("remember the alpha plan"), user("go on")]}]


def assert_unfinished(added: dict, done: dict) -> None:
    """`done` closes the compaction item `added` opened, unfinished: sealed by this
    deployment (it can be sent back), standing for nothing; a valid item of the SDK's."""
    from openai.types.responses import ResponseCompactionItem

    item = done["item"]
    assert (done["output_index"], item["id"], item["type"]) == (0, added["id"], "compaction")
    assert set(item) == {"id", "type", "encrypted_content"}
    assert added["encrypted_content"] == "" != item["encrypted_content"]
    assert ResponseCompactionItem.model_validate(item).model_dump() == {**item,
                                                                       "created_by": None}
    assert is_unfinished_here(item)


@pytest.mark.parametrize("model", ["fake-drop", "fake-bad-shape-delta-string",
                                   "fake-bad-shape-usage-number"])
def test_a_summary_broken_mid_stream_fails_the_response_and_counts_it(
        api, clean_upstream, model):
    """The summary's stream breaks after its first piece (`Hello`, no usage chunk): cut, or
    a chunk off shape (a malformed stream, as for a turn). The response fails in its
    stream, its usage the summary call's, counted as a cut turn's; its compaction item is
    closed first, unfinished. A continuation sends the whole history (the unfinished
    compaction hides nothing), and compacts again when asked: its summary stands for all of
    it."""
    reply = api.post("/responses", json={
        "model": model, "stream": True,
        "input": [user("remember the beta plan"), {"type": "compaction_trigger"}]})
    events, final = check_sse_stream(reply.content)
    summary_body = {"model": model, "stream": True,
                    "stream_options": {"include_usage": True},
                    "messages": [user("remember the beta plan"), user(COMPACTION_PROMPT)]}
    assert chats(clean_upstream) == [summary_body]
    assert [e["type"] for e in events] == [
        "response.created", "response.in_progress", "response.output_item.added",
        "response.compaction.compacting", "response.output_item.done", "response.failed"]
    assert_unfinished(events[2]["item"], events[4])
    assert final["output"] == [events[4]["item"]]
    malformed = "The upstream sent a malformed stream chunk."
    assert (final["status"], final["error"]) == ("failed", {"code": "server_error", "message": (
        "The upstream connection failed mid-stream: the upstream closed the connection"
        if model == "fake-drop"
        else malformed)})
    assert final["usage"] == estimated(summary_body, "Hello")
    assert api.get(f"/responses/{final['id']}").json() == final

    clean_upstream.clear()
    second = api.post("/responses", json={"model": "fake-echo", "input": "go on",
                                          "previous_response_id": final["id"]}).json()
    answer = second["output"][0]["content"][0]["text"]
    assert chats(clean_upstream) == [{
        "model": "fake-echo", "stream": True, "stream_options": {"include_usage": True},
        "messages": [user("remember the beta plan"), user("go on")]}]
    clean_upstream.clear()
    third = api.post("/responses", json={
        "model": "fake-echo", "previous_response_id": second["id"],
        "input": [user("and on"), {"type": "compaction_trigger"}]}).json()
    history = [user("remember the beta plan"), user("go on"),
               {"role": "assistant", "content": answer}, user("and on")]
    summary = {"model": "fake-echo", "stream": True, "stream_options": {"include_usage": True},
               "messages": [*history, user(COMPACTION_PROMPT)]}
    compacted = {"model": "fake-echo", "stream": True, "stream_options": {"include_usage": True},
                 "messages": [{"role": "system",
                               "content": COMPACTION_PREFIX + summary_of(history)}]}
    assert chats(clean_upstream) == [summary, compacted]
    assert [i["type"] for i in third["output"]] == ["compaction", "message"]
    clean_upstream.clear()
    api.post("/responses", json={"model": "fake-echo", "input": "last",
                                 "previous_response_id": third["id"]})
    assert chats(clean_upstream)[0]["messages"] == [
        {"role": "system", "content": COMPACTION_PREFIX + summary_of(history)},
        {"role": "assistant", "content": third["output"][1]["content"][0]["text"]},
        user("last")]


# --- the Agents SDK's compaction session -------------------------------------------------

def test_an_agents_sdk_compaction_session_runs_30_turns_in_a_40_token_window(
        windowed, keys, clean_upstream, tmp_path):
    import asyncio

    from agents import (Agent, ModelSettings, OpenAIResponsesModel, Runner, SQLiteSession,
                        set_tracing_disabled)
    from agents.memory import OpenAIResponsesCompactionSession
    from openai import AsyncOpenAI

    set_tracing_disabled(True)  # nothing leaves the machine

    async def session_of_30_turns() -> list[str]:
        client = AsyncOpenAI(base_url=windowed.base_url, api_key=keys[0], max_retries=0)
        agent = Agent(name="helper", instructions="Be brief.",
                      model=OpenAIResponsesModel("fake-text", client),
                      model_settings=ModelSettings(truncation="auto"))
        session = OpenAIResponsesCompactionSession(
            "s", SQLiteSession("s", str(tmp_path / "session.db")), client=client,
            model="gpt-4.1")  # compacted by the default route's model
        answers = []
        for turn in range(30):
            result = await Runner.run(agent, f"turn {turn}", session=session)
            answers.append(result.final_output)
        await client.close()
        return answers

    assert asyncio.run(session_of_30_turns()) == ["Hello, world! How can I help?"] * 30
    sent = [body for body in chats(clean_upstream) if body["model"] == "fake-text"]
    summaries = [body for body in chats(clean_upstream) if body["model"] == "gpt-4.1"]
    assert len(sent) == 30 and len(summaries) == 3  # compacted after turns 10, 20 and 30
    # within the window every turn (one token per word, as the fake's /tokenize counts)
    assert max(len(render_messages(body["messages"]).split()) for body in sent) <= 40
    assert sent[-1]["messages"][:2] == [
        {"role": "system", "content": "Be brief."},
        {"role": "system", "content": COMPACTION_PREFIX + "Hello, world! How can I help?"}]
    assert sent[-1]["messages"][-1] == user("turn 29")
