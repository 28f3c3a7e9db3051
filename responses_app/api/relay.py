"""Relaying a response's events from the bus to the client: as SSE, or as one JSON body.
Each reply takes a subscription (`event_bus().subscribe(...)`) and closes it when done.

The relay waits for the run's first entry before answering, so an upstream that fails
before it starts becomes a plain HTTP error (a 429 stays a 429) instead of a stream.
Then entries are written as they arrive, whole SSE blocks only, with a keep-alive comment
whenever nothing flowed for SSE_KEEPALIVE_SECONDS, and `data: [DONE]` after the end.
Replies are front-agnostic: a status, headers and either a body or an async byte stream.
"""
from dataclasses import dataclass, field
from typing import AsyncIterator, Awaitable, Callable

import orjson
from django.conf import settings

from observability.metrics import ACTIVE_STREAMS, EVENTS_RELAYED

from ..bus import KEEPALIVE
from ..bus.entries import Entry
from ..errors import ServiceUnavailable, error_body
from ..translation.sse import DONE, KEEPALIVE as KEEPALIVE_BYTES, event_of_block, split_blocks

# called when a stream stops before the run's end: its client left
Abandoned = Callable[[], Awaitable[None]] | None

SSE_HEADERS = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache"),
               (b"x-accel-buffering", b"no")]


@dataclass
class Reply:
    status: int
    headers: list = field(default_factory=list)
    body: bytes = b""
    stream: AsyncIterator[bytes] | None = None


def json_reply(status: int, payload: dict, headers: dict | None = None) -> Reply:
    extra = [(k.lower().encode(), str(v).encode()) for k, v in (headers or {}).items()]
    return Reply(status, [(b"content-type", b"application/json"), *extra], orjson.dumps(payload))


async def stream_reply(subscription, abandoned: Abandoned = None) -> Reply:
    """Relay the subscribed events as an SSE stream, once the first is there; `abandoned`
    is awaited if the stream stops before the run's end (the client left)."""
    try:
        first = await _first_entry(subscription)
    except BaseException:
        subscription.close()
        raise
    if first.error is not None:
        subscription.close()
        return _error_reply(first)
    return Reply(200, SSE_HEADERS, stream=_sse_body(subscription, first, abandoned))


def resume_reply(subscription, abandoned: Abandoned = None) -> Reply:
    """Replay the subscribed events, then follow live ones until the end.

    Unlike a fresh stream it answers at once: the run may still be queued behind others,
    and keep-alives hold the connection meanwhile."""
    return Reply(200, SSE_HEADERS, stream=_sse_body(subscription, None, abandoned))


async def final_reply(subscription) -> Reply:
    """Wait for the run to end; the final response object as JSON, or the error."""
    response_id = subscription.response_id
    try:
        entry = await _first_entry(subscription)
        while not entry.end:
            entry = await subscription.get()
    finally:
        subscription.close()
    if entry.error is not None:
        return _error_reply(entry)
    blocks = split_blocks(entry.data)
    if not blocks:  # ended without a terminal event: cancelled
        return json_reply(409, error_body(f"Response {response_id} was cancelled.",
                                          "invalid_request_error", None, "response_cancelled"))
    resource = event_of_block(blocks[-1])["response"]
    if resource["status"] == "failed":
        error = resource["error"]
        status = 504 if error["code"] == "request_timeout" else 502
        return json_reply(status, error_body(
            f"Response {resource['id']} failed: {error['message']}", "server_error", None,
            error["code"]))
    return json_reply(200, resource)


async def _first_entry(subscription) -> Entry:
    entry = await subscription.get(settings.UPSTREAM_TIMEOUT + settings.UPSTREAM_CONNECT_TIMEOUT)
    if entry is KEEPALIVE:
        raise ServiceUnavailable("No worker started this response in time; retry shortly.")
    return entry


def _error_reply(entry: Entry) -> Reply:
    error = entry.error
    return json_reply(error["status"], error["body"], error.get("headers"))


async def _sse_body(subscription, first: Entry | None, abandoned: Abandoned):
    keepalive = settings.SSE_KEEPALIVE_SECONDS
    pending = subscription.pending
    finished = False
    ACTIVE_STREAMS.inc()
    try:
        entry = first if first is not None else await subscription.get(keepalive)
        while True:
            if entry is KEEPALIVE:
                yield KEEPALIVE_BYTES
            elif entry.error is not None:
                finished = True
                return  # the bus failed under us; the client can resume or GET the response
            else:
                chunks = [entry.data]
                events = entry.last - entry.first + 1
                while not entry.end and pending:
                    entry = pending.popleft()
                    if entry.error is not None:
                        break
                    chunks.append(entry.data)
                    events += entry.last - entry.first + 1
                if entry.end and entry.error is None:
                    chunks.append(DONE)
                yield b"".join(chunks)
                EVENTS_RELAYED.inc(events)
                if entry.end:
                    finished = True
                    return
            entry = await subscription.get(keepalive)
    finally:
        ACTIVE_STREAMS.dec()
        subscription.close()
        if not finished and abandoned is not None:
            await abandoned()
