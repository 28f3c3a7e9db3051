"""`POST /v1/chat/completions` end to end on the shared production deployment (Daphne, the
run queue's worker, Redis, Postgres), judged by the openai SDK's `chat.completions`
resources and helper, with the exact requests the fake upstream received."""
import httpx
import pytest

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


def test_create_streamed(openai_client, clean_upstream):
    chunks = list(openai_client.chat.completions.create(
        model="fake-text", messages=[{"role": "user", "content": "hi"}], stream=True,
        stream_options={"include_usage": True}))
    assert {c.id for c in chunks} == {chunks[0].id}
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
