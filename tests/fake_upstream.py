"""Fake OpenAI-compatible upstream LLM server (raw ASGI app served by uvicorn).

Owns the HTTP side of the fake upstream; the canned behaviours live in
``tests.upstream_scenarios``.  Kept CPU-cheap for the benchmark: every scenario's SSE
frames are encoded once and each chunk is a single ``http.response.body`` message.

Routes:
  POST   /v1/chat/completions  streaming (``stream: true``) or a ``chat.completion`` JSON
  GET    /v1/models            the named scenarios (with vLLM's ``max_model_len``: FAKE_MAX_MODEL_LEN)
  POST   /tokenize             vLLM's (``messages`` or ``prompt``: ``count``) and llama.cpp's
                                (``content``: ``tokens``); one token per whitespace-separated word
                                of the messages as ``fake-echo`` renders them; recorded in the log;
                                messages holding FAKE_COUNT_FAILURE and a summary answer 500
  POST   /v1/embeddings        deterministic embeddings (fake_embedding: hashed bag of words,
                                FAKE_EMBEDDING_DIMENSIONS or the request's ``dimensions``); an
                                input holding FAKE_EMBEDDING_FAILURE answers 500
  GET    /_log                 recorded requests ``[{"path", "headers", "body"}]``
  DELETE /_log                 clear the log
  GET    /_stats               ``{"requests", "disconnects", "completed", "in_flight",
                                "max_in_flight"}`` (streams open now, and at most at once)

In-process use::

    up = FakeUpstream().start()      # port 0 -> ephemeral; up.base_url == "http://127.0.0.1:<port>/v1"
    ...; up.requests(); up.stats(); up.clear(); up.stop()

Separate process: ``python -m tests.fake_upstream --port 8901 [--no-record] [--host H]``
prints ``READY <port>`` once listening (on 127.0.0.1 unless ``--host`` says otherwise: the
compose check runs it in a container of its own).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import logging
import math
import re
import socket
import sys
import threading
import time

import orjson
import uvicorn

from tests.upstream_scenarios import (CREATED, SCENARIOS, Scenario, accumulate, flaky_failure, is_cacheable,
                                      render_messages, scenario_for)

try:
    import httptools  # noqa: F401

    HTTP_IMPL = "httptools"
except ImportError:
    HTTP_IMPL = "h11"

DONE = b"data: [DONE]\n\n"
BAD_CHUNK = b"data: {not json\n\n"
SSE_HEADERS = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
JSON_HEADERS = [(b"content-type", b"application/json")]
FAKE_MAX_MODEL_LEN = 2048
FAKE_EMBEDDING_DIMENSIONS = 1536
FAKE_EMBEDDING_FAILURE = "EMBEDDING_FAILS_HERE"
# a /tokenize of messages holding it and a compaction's summary (the gateway's prefix)
# answers 500: the count a run makes after it compacted fails, the one before succeeds
FAKE_COUNT_FAILURE = "COUNT_FAILS_AFTER_COMPACTION"
COMPACTED_MARK = "Summary of the earlier conversation"


class _Drop(Exception):
    """Raised inside the app to make uvicorn close the connection mid-body."""


class _QuietDrop(logging.Filter):
    """Hide uvicorn's tracebacks for deliberate drops and for streams cancelled at shutdown."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, (_Drop, asyncio.CancelledError))


_QUIET = _QuietDrop()


class FakeUpstreamApp:
    """The ASGI application; state (log, counters) lives on the instance."""

    def __init__(self, record: bool = True) -> None:
        self.record = record
        self.log: list[dict] = []
        self.counters = {"requests": 0, "disconnects": 0, "completed": 0, "in_flight": 0,
                         "max_in_flight": 0}
        self._frames: dict[str, list[bytes]] = {}
        self._failures_served: dict[str, int] = {}  # fake-flaky model -> failures sent
        self.released: set[str] = set()  # held models (bench-…-held…) the test let go on

    # -- helpers ---------------------------------------------------------------

    def frames(self, model: str, scenario: Scenario) -> list[bytes]:
        cached = self._frames.get(model)
        if cached is None:
            cached = [b"data: " + orjson.dumps(c) + b"\n\n" for c in scenario.chunks]
            if is_cacheable(model):
                if len(self._frames) > 1024:
                    self._frames.clear()
                self._frames[model] = cached
        return cached

    @staticmethod
    async def _read_body(receive) -> bytes:
        body = b""
        while True:
            msg = await receive()
            if msg["type"] == "http.disconnect":
                return body
            body += msg.get("body", b"")
            if not msg.get("more_body"):
                return body

    @staticmethod
    async def _respond(send, status: int, payload: bytes, headers: list | None = None) -> None:
        hdrs = list(headers or JSON_HEADERS) + [(b"content-length", str(len(payload)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": hdrs})
        await send({"type": "http.response.body", "body": payload})

    async def _json(self, send, status: int, obj) -> None:
        await self._respond(send, status, orjson.dumps(obj))

    # -- ASGI entry point ------------------------------------------------------

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return
        method, path = scope["method"], scope["path"].rstrip("/")
        if path == "/v1/chat/completions" and method == "POST":
            await self.chat(scope, receive, send)
        elif path == "/v1/models" and method == "GET":
            data = [{"id": name, "object": "model", "created": 0, "owned_by": "fake",
                     "max_model_len": FAKE_MAX_MODEL_LEN} for name in SCENARIOS]
            await self._json(send, 200, {"object": "list", "data": data})
        elif path == "/tokenize" and method == "POST":
            await self.tokenize(scope, receive, send)
        elif path == "/v1/embeddings" and method == "POST":
            await self.embeddings(scope, receive, send)
        elif path == "/_log" and method == "GET":
            await self._json(send, 200, self.log)
        elif path == "/_log" and method == "DELETE":
            self.log.clear()
            await self._json(send, 200, {"cleared": True})
        elif path == "/_stats" and method == "GET":
            await self._json(send, 200, self.counters)
        elif path == "/_release" and method == "POST":  # release(), from another process
            self.released.add(str(orjson.loads(await self._read_body(receive))["model"]))
            await self._json(send, 200, {"released": True})
        else:
            await self._json(send, 404, {"error": {"message": f"no route {method} {path}", "type": "not_found",
                                                   "param": None, "code": None}})

    async def chat(self, scope, receive, send) -> None:
        raw = await self._read_body(receive)
        self.counters["requests"] += 1
        try:
            body = orjson.loads(raw) if raw else {}
        except orjson.JSONDecodeError:
            body = None
        if self.record:
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
            self.log.append({"path": scope["path"], "headers": headers, "body": body})
        if not isinstance(body, dict):
            await self._json(send, 400, {"error": {"message": "request body is not a JSON object",
                                                   "type": "invalid_request_error", "param": None, "code": None}})
            return
        model = str(body.get("model") or "")
        sc = scenario_for(model, body)
        flaky = flaky_failure(model)
        if flaky is not None and self._failures_served.get(model, 0) < flaky[1]:
            self._failures_served[model] = self._failures_served.get(model, 0) + 1
            sc = flaky[0]
        extra = [(k.lower().encode(), str(v).encode()) for k, v in sc.headers.items()]
        if sc.status != 200:
            await self._respond(send, sc.status, orjson.dumps(sc.error_body or {}), JSON_HEADERS + extra)
            self.counters["completed"] += 1
        elif body.get("stream"):
            await self.stream(receive, send, model, sc, extra)
        else:
            await self.non_stream(send, sc, extra)

    async def tokenize(self, scope, receive, send) -> None:
        body = orjson.loads(await self._read_body(receive) or b"{}")
        if self.record:
            self.log.append({"path": scope["path"], "headers": {}, "body": body})
        if "messages" in body:
            rendered = render_messages(body["messages"])
            if FAKE_COUNT_FAILURE in rendered and COMPACTED_MARK in rendered:
                await self._json(send, 500, {"error": {"message": "tokenizer exploded"}})
                return
            words = rendered.split()
        else:
            words = str(body.get("prompt", body.get("content", ""))).split()
        if "content" in body:
            await self._json(send, 200, {"tokens": list(range(len(words)))})
        else:
            await self._json(send, 200, {"count": len(words), "max_model_len": FAKE_MAX_MODEL_LEN,
                                         "tokens": list(range(len(words)))})

    async def embeddings(self, scope, receive, send) -> None:
        body = orjson.loads(await self._read_body(receive) or b"{}")
        if self.record:
            self.log.append({"path": scope["path"], "headers": {}, "body": body})
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else texts
        if any(FAKE_EMBEDDING_FAILURE in str(text) for text in texts):
            await self._json(send, 500, {"error": {"message": "embedding backend exploded",
                                                   "type": "server_error", "param": None,
                                                   "code": None}})
            return
        dimensions = body.get("dimensions") or FAKE_EMBEDDING_DIMENSIONS
        data = [{"object": "embedding", "index": index,
                 "embedding": fake_embedding(str(text), dimensions)}
                for index, text in enumerate(texts)]
        tokens = sum(len(str(text).split()) for text in texts)
        await self._json(send, 200, {"object": "list", "data": data, "model": body.get("model"),
                                     "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})

    async def stream(self, receive, send, model: str, sc: Scenario, extra: list) -> None:
        frames = self.frames(model, sc)
        gone = asyncio.Event()

        async def watch() -> None:
            if (await receive())["type"] == "http.disconnect":
                gone.set()

        watcher = asyncio.ensure_future(watch())
        counters = self.counters
        counters["in_flight"] += 1
        counters["max_in_flight"] = max(counters["max_in_flight"], counters["in_flight"])
        try:
            await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS + extra})
            if sc.first_byte_delay:
                await asyncio.sleep(sc.first_byte_delay)
            loop = asyncio.get_running_loop()
            start = loop.time()
            for i, frame in enumerate(frames):
                if i and sc.pacing:  # deadline-based so per-chunk overhead does not accumulate
                    await asyncio.sleep(max(0.0, start + i * sc.pacing - loop.time()))
                if gone.is_set():
                    break
                if i == sc.drop_after:
                    raise _Drop()
                if i == sc.hold_after:
                    await self._held(send, model, gone)
                bad = sc.bad_chunk or BAD_CHUNK
                if sc.bad_chunk_after is not None and i < sc.bad_chunk_after \
                        and not sc.bad_chunk_apart:
                    continue  # sent with the bad chunk (below)
                if i == sc.bad_chunk_after and sc.bad_chunk_apart:  # in a read of its own
                    await asyncio.sleep(0.05)
                    await send({"type": "http.response.body", "body": bad, "more_body": True})
                elif i == sc.bad_chunk_after:  # the chunks before it and it in one write
                    await send({"type": "http.response.body",
                                "body": b"".join(frames[:i]) + bad, "more_body": True})
                await send({"type": "http.response.body", "body": frame, "more_body": True})
            else:
                if sc.drop_after is not None:  # drop_after >= number of chunks: cut before [DONE]
                    raise _Drop()
                if not gone.is_set():
                    await send({"type": "http.response.body", "body": DONE, "more_body": False})
                    self.counters["completed"] += 1
                    return
            self.counters["disconnects"] += 1
        except OSError:  # transport failed under us: the client went away
            self.counters["disconnects"] += 1
        finally:
            counters["in_flight"] -= 1
            watcher.cancel()

    async def _held(self, send, model: str, gone: asyncio.Event) -> None:
        """Wait until the test releases `model`, with a keep-alive comment every second."""
        ticks = 0
        while model not in self.released and not gone.is_set():
            await asyncio.sleep(0.05)
            ticks += 1
            if ticks % 20 == 0:
                await send({"type": "http.response.body", "body": b": held\n\n", "more_body": True})

    async def non_stream(self, send, sc: Scenario, extra: list) -> None:
        if sc.first_byte_delay:
            await asyncio.sleep(sc.first_byte_delay)
        acc = accumulate(sc)
        first = sc.chunks[0] if sc.chunks else {"id": "chatcmpl-fake", "model": "fake"}
        message = {"role": "assistant", "content": acc["content"] or None, "refusal": acc["refusal"] or None,
                   "tool_calls": acc["tool_calls"]}
        if acc["reasoning_content"]:
            message["reasoning_content"] = acc["reasoning_content"]
        payload = orjson.dumps({
            "id": first["id"], "object": "chat.completion", "created": CREATED, "model": first["model"],
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": acc["finish_reason"]}],
            "usage": acc["usage"],
        })
        if sc.bad_chunk_after is not None:
            payload = b"{not json"
        if sc.drop_after is not None:  # promise the full length, deliver half, then cut the connection
            hdrs = JSON_HEADERS + extra + [(b"content-length", str(len(payload)).encode())]
            await send({"type": "http.response.start", "status": 200, "headers": hdrs})
            await send({"type": "http.response.body", "body": payload[: len(payload) // 2], "more_body": True})
            raise _Drop()
        await self._respond(send, 200, payload, JSON_HEADERS + extra)
        self.counters["completed"] += 1


def fake_embedding(text: str, dimensions: int = FAKE_EMBEDDING_DIMENSIONS) -> list[float]:
    """A hashed bag of words: each lower-cased word adds 1 to the coordinate its SHA-256
    names (no two words of tests/stores_corpus.py share one); L2-normalized (all zeros for a text without words). Texts sharing words
    are close in cosine distance, so rankings on a fixed corpus are exact and meaningful."""
    vector = [0.0] * dimensions
    for word in re.findall(r"\w+", text.lower()):
        digest = hashlib.sha256(word.encode()).digest()
        vector[int.from_bytes(digest[:8], "big") % dimensions] += 1.0
    norm = math.sqrt(sum(value * value for value in vector))
    return [value / norm for value in vector] if norm else vector


def _config(app: FakeUpstreamApp, **kw) -> uvicorn.Config:
    config = uvicorn.Config(app, loop="asyncio", http=HTTP_IMPL, lifespan="off", access_log=False,
                            log_level="warning", timeout_graceful_shutdown=1, **kw)
    logging.getLogger("uvicorn.error").addFilter(_QUIET)  # no-op when already added
    return config


def _bind(port: int, host: str = "127.0.0.1") -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # no Nagle: a paced stream is many small writes (accepted sockets inherit this)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    return sock


class FakeUpstream:
    """Runs :class:`FakeUpstreamApp` under uvicorn in a background thread on 127.0.0.1."""

    def __init__(self, port: int = 0, record: bool = True) -> None:
        self.app = FakeUpstreamApp(record=record)
        self._sock = _bind(port)
        self.port: int = self._sock.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def start(self, timeout: float = 10.0) -> "FakeUpstream":
        if self._sock.fileno() == -1:  # restarted after stop(): rebind the same port
            self._sock = _bind(self.port)
        # log_config=None: leave the host process's logging (e.g. pytest's) alone
        self._server = uvicorn.Server(_config(self.app, log_config=None))
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]},
                                        name=f"fake-upstream-{self.port}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("fake upstream failed to start")
            time.sleep(0.01)
        return self

    def stop(self, timeout: float = 5.0) -> None:
        if self._server is None:
            return
        self._server.should_exit = True
        self._thread.join(timeout)
        if self._thread.is_alive():
            self._server.force_exit = True
            self._thread.join(timeout)
        self._sock.close()
        self._server = None

    def __enter__(self) -> "FakeUpstream":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def requests(self) -> list[dict]:
        return list(self.app.log)

    def clear(self) -> None:
        """Forget recorded requests and zero the counters."""
        self.app.log.clear()
        for name in self.app.counters:
            self.app.counters[name] = 0

    def stats(self) -> dict:
        return dict(self.app.counters)

    def release(self, model: str) -> None:
        """Let the streams of a held model (``bench-…-held…``) go on."""
        self.app.released.add(model)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8901)
    parser.add_argument("--no-record", action="store_true", help="do not keep a request log (benchmark mode)")
    parser.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args(argv)
    sock = _bind(args.port, args.host)
    server = uvicorn.Server(_config(FakeUpstreamApp(record=not args.no_record)))

    async def run() -> None:
        task = asyncio.ensure_future(server.serve(sockets=[sock]))
        while not server.started and not task.done():
            await asyncio.sleep(0.01)
        if server.started:
            print(f"READY {sock.getsockname()[1]}", flush=True)
        await task

    asyncio.run(run())
    if not server.started:
        sys.exit(1)


if __name__ == "__main__":
    main()
