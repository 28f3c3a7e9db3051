"""The gateway's calls to its upstreams go direct, whatever HTTP_PROXY, HTTPS_PROXY and
ALL_PROXY say: the chat stream's client (responses_app/worker/http_stream.py: the turns and
the compaction summary) and the embedding client (vector_stores/keep_alive.py) have no
proxy support, so the httpx calls beside them (token counts, the context window, the model list)
do not read the environment either: one route, one path, whichever call it is. A loopback
proxy that records what reaches it, and the fake upstream over HTTP."""
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from responses_app.context.summary import COMPACTION_PROMPT
from responses_app.worker.summary_call import summarize
from responses_app.models_catalog import _upstream_models
from tests.upstream_scenarios import render_messages
from upstreams.routing import Route
from upstreams.token_counting import (context_window, count_chat_tokens, count_text,
                                      forget_windows)
from vector_stores.embedding import client_for, post_embeddings


class RecordingProxy(BaseHTTPRequestHandler):
    """A forward proxy that records each request line and forwards nothing (502)."""

    def _refuse(self):
        self.server.seen.append(f"{self.command} {self.path}")
        self.send_response(502)
        self.send_header("content-length", "0")
        self.end_headers()

    do_GET = do_POST = do_CONNECT = _refuse

    def log_message(self, *args):
        pass


@pytest.fixture
def proxy(monkeypatch):
    server = ThreadingHTTPServer(("127.0.0.1", 0), RecordingProxy)
    server.seen = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.setenv(name, url)
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    yield server
    server.shutdown()
    server.server_close()


def test_upstream_calls_ignore_the_environments_proxy(proxy, clean_upstream):
    route = Route(name="r", base_url=clean_upstream.base_url, api_key="", connect_timeout=2,
                  idle_timeout=5, token_counter="vllm")
    messages = [{"role": "user", "content": "one two three"}]
    body = {"model": "fake-echo", "messages": messages}
    summary, usage = summarize(route, body)
    assert usage["prompt_tokens"] == 12 and usage["completion_tokens"] == 3
    assert summary == render_messages(
        [*messages, {"role": "user", "content": COMPACTION_PROMPT}]).strip()
    assert count_chat_tokens(route, body).tokens == len(render_messages(messages).split())
    assert count_text(route, "four words right here").tokens == 4
    forget_windows()
    assert context_window(route, "fake-text") is not None  # the fake's /v1/models
    assert _upstream_models(route, []) != []
    reply = post_embeddings(route, {"model": "fake-embed", "input": ["x y"]}, client_for(route))
    assert reply.status_code == 200
    assert proxy.seen == []
    assert [r["path"] for r in clean_upstream.requests()] == [
        "/v1/chat/completions", "/tokenize", "/tokenize", "/v1/embeddings"]
