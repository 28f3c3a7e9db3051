"""Counting a chat request's input tokens for an upstream route, and its context window.

Each route names its counter (UpstreamRoute.token_counter):
- `vllm`: the upstream's own `POST /tokenize` with the chat messages (and tools): vLLM
  applies the model's chat template, so the count is the one the model will see;
- `llamacpp`: llama.cpp's `POST /tokenize` on the request rendered as text (render_chat);
- `tokenizer`: a local Hugging Face `tokenizer.json` (the `tokenizers` library) on the same
  rendering;
- `estimate`: no tokenizer at all, UTF-8 bytes / 4 of the rendering, labelled `estimate`.
The last three count the gateway's rendering of the messages, not the model's own chat
template, so they can differ from the upstream's count by a few tokens per message.

Its calls to the upstream go direct (`trust_env=False`): no upstream call reads the
environment's proxy settings (docs/configuration.md, "Proxies").

The context window is the route's setting; unset on a `vllm` route, it is the
`max_model_len` that vLLM's `GET /v1/models` reports for the model (remembered a while).
"""
import threading
import time
from dataclasses import dataclass

import httpx
import orjson

from .routing import Route

COUNTERS = ("estimate", "tokenizer", "vllm", "llamacpp")
WINDOW_CACHE_SECONDS = 300.0
BYTES_PER_TOKEN = 4

_lock = threading.Lock()
_tokenizers: dict = {}  # path -> tokenizers.Tokenizer
_windows: dict = {}  # (base_url, model) -> (expires, window or None)


class CountFailed(Exception):
    """The route's counter could not count (its upstream did not answer as expected)."""


@dataclass(frozen=True)
class TokenCount:
    tokens: int
    method: str  # one of COUNTERS: how the count was made (`estimate` is one)


def count_chat_tokens(route: Route, body: dict) -> TokenCount:
    """The input tokens of the chat request `body` as the route's counter counts them."""
    if route.token_counter == "vllm":
        return TokenCount(_vllm_count(route, body), "vllm")
    return count_text(route, render_chat(body))


def count_text(route: Route, text: str) -> TokenCount:
    """The tokens of a plain text (no chat template) with the route's counter."""
    counter = route.token_counter
    if counter == "tokenizer":
        # encode_batch_fast skips the offsets (about a fifth less CPU on 100 KB); the
        # encoding's length, not len(encoding.ids), which builds a list of every id
        # (0.2 ms on 100 KB). The library's call is all the rest of a count's time.
        [encoding] = _tokenizer(route.tokenizer_path).encode_batch_fast(
            [text], add_special_tokens=False)
        return TokenCount(len(encoding), "tokenizer")
    if counter == "vllm":
        answer = _post(route, "/tokenize", {"prompt": text, "add_special_tokens": False})
        return TokenCount(_count_of(route, answer), "vllm")
    if counter == "llamacpp":
        answer = _post(route, "/tokenize", {"content": text, "add_special": False})
        return TokenCount(len(answer.get("tokens") or ()), "llamacpp")
    return TokenCount(-(-len(text.encode()) // BYTES_PER_TOKEN), "estimate")


def render_chat(body: dict) -> str:
    """The chat request as the text the local counters count: each message as
    `<|role|>` and its text (tool calls as JSON), then the tools' definitions as JSON."""
    lines = []
    for message in body.get("messages") or ():
        lines.append(f"<|{message['role']}|>")
        content = message.get("content")
        if isinstance(content, list):
            content = "\n".join(part.get("text", "") for part in content
                                if part.get("type") == "text")
        if content:
            lines.append(content)
        for call in message.get("tool_calls") or ():
            lines.append(orjson.dumps(call["function"]).decode())
    if body.get("tools"):
        lines.append(orjson.dumps(body["tools"]).decode())
    return "\n".join(lines)


def context_window(route: Route, model: str) -> int | None:
    """The model's context window in tokens, None when unknown."""
    if route.context_window:
        return route.context_window
    if route.token_counter != "vllm":
        return None
    key = (route.base_url, model)
    cached = _windows.get(key)
    if cached is not None and cached[0] > time.monotonic():
        return cached[1]
    window = _vllm_window(route, model)
    _windows[key] = (time.monotonic() + WINDOW_CACHE_SECONDS, window)
    return window


def forget_windows() -> None:
    _windows.clear()


def _vllm_count(route: Route, body: dict) -> int:
    request = {"model": body["model"], "messages": body["messages"],
               "add_generation_prompt": True}
    if body.get("tools"):
        request["tools"] = body["tools"]
    return _count_of(route, _post(route, "/tokenize", request))


def _count_of(route: Route, answer: dict) -> int:
    if not isinstance(answer.get("count"), int):
        raise CountFailed(f"upstream route '{route.name}': /tokenize answered no count")
    return answer["count"]


def _vllm_window(route: Route, model: str) -> int | None:
    try:
        with httpx.Client(timeout=route.connect_timeout, trust_env=False) as client:
            reply = client.get(f"{route.base_url}/models", headers=route.request_headers())
        models = reply.json().get("data") or []
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    for entry in models:
        if isinstance(entry, dict) and entry.get("id") == model:
            window = entry.get("max_model_len")
            return window if isinstance(window, int) and window > 0 else None
    return None


def _post(route: Route, path: str, payload: dict) -> dict:
    """POST to the upstream's server root (its base URL without `/v1`)."""
    root = route.base_url.removesuffix("/v1")
    try:
        with httpx.Client(timeout=httpx.Timeout(route.idle_timeout,
                                                connect=route.connect_timeout),
                          trust_env=False) as client:
            reply = client.post(f"{root}{path}", content=orjson.dumps(payload),
                                headers={"content-type": "application/json",
                                         **route.request_headers()})
        reply.raise_for_status()
        answer = orjson.loads(reply.content)
    except httpx.HTTPStatusError as exc:  # its status, not httpx's text (the URL, a link)
        raise CountFailed(f"upstream route '{route.name}': {path} answered HTTP "
                          f"{exc.response.status_code}") from exc
    except (httpx.HTTPError, orjson.JSONDecodeError) as exc:
        raise CountFailed(f"upstream route '{route.name}': {path} failed: {exc}") from exc
    if not isinstance(answer, dict):
        raise CountFailed(f"upstream route '{route.name}': {path} answered no object")
    return answer


def _tokenizer(path: str):
    tokenizer = _tokenizers.get(path)
    if tokenizer is None:
        from tokenizers import Tokenizer  # only routes with a local tokenizer need it

        with _lock:
            tokenizer = _tokenizers.get(path)
            if tokenizer is None:
                try:
                    tokenizer = _tokenizers[path] = Tokenizer.from_file(path)
                except Exception as exc:  # a missing or unreadable file: the route's problem
                    raise CountFailed(f"tokenizer file {path!r} cannot be read: {exc}") from exc
    return tokenizer
