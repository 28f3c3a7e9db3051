"""Quick self-tests for the fake upstream LLM server (plain pytest, no Django, no DB)."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.fake_upstream import FakeUpstream
from tests.upstream_scenarios import SCENARIOS, accumulate, text_of

pytestmark = []


@pytest.fixture(scope="module")
def upstream():
    with FakeUpstream() as up:
        yield up


@pytest.fixture()
def client(upstream):
    upstream.clear()
    with httpx.Client(base_url=upstream.base_url, timeout=10) as c:
        yield c


def stream_events(client: httpx.Client, model: str, **extra) -> list:
    """POST a streaming request; return the decoded `data:` payloads ("[DONE]" kept as a string)."""
    body = {"model": model, "stream": True, "messages": [{"role": "user", "content": "hi"}], **extra}
    with client.stream("POST", "/chat/completions", json=body) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        data = [line[len("data: "):] for line in r.iter_lines() if line.startswith("data: ")]
    return [d if d == "[DONE]" else json.loads(d) for d in data]


def test_text_stream_exact_text_and_usage(client):
    events = stream_events(client, "fake-text")
    assert events[-1] == "[DONE]"
    chunks = events[:-1]
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    assert text == "Hello, world! How can I help?" == text_of(SCENARIOS["fake-text"])
    assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1] == "stop"
    usage = chunks[-1]
    assert usage["choices"] == []
    assert usage["usage"]["total_tokens"] == usage["usage"]["prompt_tokens"] + usage["usage"]["completion_tokens"]
    assert "reasoning_tokens" in usage["usage"]["completion_tokens_details"]
    assert "cached_tokens" in usage["usage"]["prompt_tokens_details"]


def test_429_status_and_retry_after(client):
    r = client.post("/chat/completions", json={"model": "fake-429", "stream": True, "messages": []})
    assert r.status_code == 429
    assert r.headers["retry-after"] == "7"
    assert r.json()["error"]["code"] == "rate_limit_exceeded"


def test_drop_raises_on_client(client):
    with pytest.raises(httpx.RemoteProtocolError):
        stream_events(client, "fake-drop")


def test_bench_yields_exact_content_deltas(client):
    events = stream_events(client, "bench-5-1")
    contents = [c["choices"][0]["delta"]["content"] for c in events[:-1]
                if c["choices"] and c["choices"][0]["delta"].get("content")]
    assert contents == ["w0 ", "w1 ", "w2 ", "w3 ", "w4 "]
    assert events[-2]["usage"]["completion_tokens"] == 5


def test_tool_scenarios_accumulate():
    calls = accumulate(SCENARIOS["fake-tools"])["tool_calls"]
    assert [(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls] == [
        ("call_abc", "get_weather", {"city": "Paris"}),
        ("call_def", "get_time", {"tz": "Europe/Paris"}),
    ]


def test_log_records_body(client, upstream):
    body = {"model": "fake-text", "stream": False, "messages": [{"role": "user", "content": "log me"}]}
    r = client.post("/chat/completions", json=body, headers={"X-Trace": "abc"})
    assert r.json()["choices"][0]["message"]["content"] == "Hello, world! How can I help?"
    logged = client.get(f"http://127.0.0.1:{upstream.port}/_log").json()
    assert logged == upstream.requests()
    assert logged[-1]["path"] == "/v1/chat/completions"
    assert logged[-1]["body"] == body
    assert logged[-1]["headers"]["x-trace"] == "abc"
    client.delete(f"http://127.0.0.1:{upstream.port}/_log")
    assert upstream.requests() == []
