"""The upstream Chat Completions client: one streaming POST, decoded into chunk dicts.

Failures before the first byte raise UpstreamRejected with the HTTP status to answer with
(a 429 stays a 429); failures after it raise UpstreamStreamFailed with the code to put in
`response.failed`. No byte for `idle_timeout` seconds is a `request_timeout`.
"""
import asyncio
from contextlib import asynccontextmanager
from dataclasses import dataclass

import httpx
import orjson

from ..errors import error_body

_clients: dict = {}  # event loop -> httpx.AsyncClient


@dataclass(frozen=True)
class UpstreamTarget:
    base_url: str
    api_key: str
    connect_timeout: float
    idle_timeout: float


class UpstreamRejected(Exception):
    """The upstream failed before streaming: `status` and `body` are what the client gets."""

    def __init__(self, status: int, body: dict, headers: dict | None = None):
        super().__init__(body["error"]["message"])
        self.status = status
        self.body = body
        self.headers = headers or {}


class UpstreamStreamFailed(Exception):
    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def http_client() -> httpx.AsyncClient:
    """The run loop's shared client (connections pooled across runs)."""
    loop = asyncio.get_running_loop()
    client = _clients.get(loop)
    if client is None:
        client = _clients[loop] = httpx.AsyncClient(
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=200),
            timeout=None,
        )
    return client


@asynccontextmanager
async def open_chat_stream(target: UpstreamTarget, body: dict):
    """POST the chat request and yield an async iterator of decoded chunks."""
    headers = {"content-type": "application/json", "accept": "text/event-stream",
               "accept-encoding": "identity"}
    if target.api_key:
        headers["authorization"] = f"Bearer {target.api_key}"
    client = http_client()
    request = client.build_request(
        "POST", f"{target.base_url}/chat/completions", content=orjson.dumps(body),
        headers=headers,
        extensions={"timeout": {"connect": target.connect_timeout, "read": target.idle_timeout,
                                "write": target.connect_timeout, "pool": target.connect_timeout}},
    )
    try:
        response = await client.send(request, stream=True)
    except httpx.TimeoutException as exc:
        raise UpstreamRejected(504, error_body(
            f"The upstream model server did not answer in time ({type(exc).__name__}).",
            "server_error", None, "upstream_timeout")) from exc
    except httpx.HTTPError as exc:
        raise UpstreamRejected(502, error_body(
            f"The upstream model server could not be reached: {exc!s}.",
            "server_error", None, "upstream_unreachable")) from exc
    try:
        if response.status_code >= 400:
            await response.aread()
            raise rejected_from_response(response)
        yield _chunks(response)
    finally:
        await response.aclose()


def rejected_from_response(response: httpx.Response) -> UpstreamRejected:
    status = response.status_code
    message = _upstream_message(response)
    headers = {}
    if status == 429:
        if "retry-after" in response.headers:
            headers["Retry-After"] = response.headers["retry-after"]
        return UpstreamRejected(429, error_body(message, "rate_limit_exceeded", None,
                                                "rate_limit_exceeded"), headers)
    if status in (400, 404, 413, 422):
        code = "model_not_found" if status == 404 else "upstream_invalid_request"
        return UpstreamRejected(400 if status != 404 else 404,
                                error_body(message, "invalid_request_error", None, code))
    if status in (408, 504):
        return UpstreamRejected(504, error_body(message, "server_error", None, "upstream_timeout"))
    return UpstreamRejected(502, error_body(
        f"The upstream model server failed with HTTP {status}: {message}", "server_error",
        None, "upstream_error"))


def _upstream_message(response: httpx.Response) -> str:
    try:
        payload = orjson.loads(response.content)
        error = payload.get("error") if isinstance(payload, dict) else None
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        if isinstance(error, str):
            return error
        if isinstance(payload, dict) and payload.get("message"):
            return str(payload["message"])
    except (orjson.JSONDecodeError, AttributeError):
        pass
    text = response.content[:500].decode("utf-8", "replace").strip()
    return text or f"HTTP {response.status_code}"


async def _chunks(response: httpx.Response):
    buffer = b""
    try:
        async for data in response.aiter_raw():
            buffer += data
            if b"\n" not in data:
                continue
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                if not line.startswith(b"data:"):
                    continue  # comments, event names, blank lines
                payload = line[5:].strip()
                if payload == b"[DONE]":
                    return
                try:
                    chunk = orjson.loads(payload)
                except orjson.JSONDecodeError:
                    raise UpstreamStreamFailed(
                        "server_error", "The upstream sent a malformed stream chunk.") from None
                if isinstance(chunk, dict) and chunk.get("error"):
                    error = chunk["error"]
                    message = error.get("message") if isinstance(error, dict) else str(error)
                    raise UpstreamStreamFailed("server_error", f"The upstream failed: {message}")
                yield chunk
    except httpx.ReadTimeout:
        raise UpstreamStreamFailed(
            "request_timeout", "The upstream sent nothing for longer than the timeout.") from None
    except httpx.HTTPError as exc:
        raise UpstreamStreamFailed(
            "server_error", f"The upstream connection failed mid-stream: {exc!s}") from None
    raise UpstreamStreamFailed("server_error",
                               "The upstream stream ended before it said it was done.")
