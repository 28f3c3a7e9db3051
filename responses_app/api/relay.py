"""Relaying a response's events from the bus to the client: one iterator (`batches`) for
every front, and the HTTP replies built on it (an SSE stream, or one JSON body); the
WebSocket turn (socket_turn.py) sends the same batches as frames. Each reply takes a
subscription (`event_bus().subscribe(...)`) and closes it when done.

The relay waits for the run's first entry before answering, so an upstream that fails
before it starts becomes a plain HTTP error (a 429 stays a 429) instead of a stream: the
APIError is raised, and rendered as every view's error is.
Then events are sent as they arrive, what is queued at once in one write, with a
keep-alive whenever nothing flowed for SSE_KEEPALIVE_SECONDS, and `data: [DONE]` after the
end. Replies are front-agnostic: a status, headers and either a body or an async byte
stream.
"""
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import AsyncIterator, Awaitable, Callable

import orjson
from django.conf import settings

from observability.metrics import ACTIVE_STREAMS, EVENTS_RELAYED

from ..bus import KEEPALIVE
from ..bus.entries import Entry, failure_of
from ..errors import APIError, ServiceUnavailable
from . import framing

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


@dataclass
class Batch:
    """Events that arrived together. `end`: the run's end is among them; `terminal`: then,
    the last event of the entry that ended it (None: it ended without one, cancelled);
    `error`: the bus failed under us after them (the stream stops without its end)."""

    events: list[bytes]
    end: bool = False
    terminal: bytes | None = None
    error: APIError | None = None


def json_reply(status: int, payload: dict, headers: dict | None = None) -> Reply:
    extra = [(k.lower().encode(), str(v).encode()) for k, v in (headers or {}).items()]
    return Reply(status, [(b"content-type", b"application/json"), *extra], orjson.dumps(payload))


async def first_entry(subscription) -> Entry:
    """The run's first entry (events, or the error that ended it before it started)."""
    entry = await subscription.get(settings.UPSTREAM_TIMEOUT + settings.UPSTREAM_CONNECT_TIMEOUT)
    if entry is KEEPALIVE:
        raise ServiceUnavailable("No worker started this response in time; retry shortly.")
    return entry


async def batches(subscription, first: Entry | None = None, counted: bool = True):
    """The subscribed events after `first` (itself included) as they arrive, what is queued
    at once joined into one Batch, KEEPALIVE after SSE_KEEPALIVE_SECONDS without any; it
    stops after the end's batch, or after one with the `error` if the bus failed under us
    (the client can resume or GET the response). `counted`: in the streams metrics.
    Iterate it under `contextlib.aclosing`: its metrics settle when the client leaves."""
    keepalive = settings.SSE_KEEPALIVE_SECONDS
    if counted:
        ACTIVE_STREAMS.inc()
    try:
        entry = first if first is not None else await subscription.get(keepalive)
        while True:
            if entry is KEEPALIVE:
                yield KEEPALIVE
            elif entry.error is not None:
                yield Batch([], error=failure_of(entry))
                return
            else:
                events = entry.events
                while not entry.end:
                    following = subscription.ready()
                    if following is None:
                        break
                    entry = following
                    if entry.error is not None:
                        break
                    events = events + entry.events
                error = None if entry.error is None else failure_of(entry)
                end = entry.end and error is None
                terminal = entry.events[-1] if end and entry.events else None
                yield Batch(events, end, terminal, error)
                if counted:
                    EVENTS_RELAYED.inc(len(events))
                if entry.end:
                    return
            entry = await subscription.get(keepalive)
    finally:
        if counted:
            ACTIVE_STREAMS.dec()


async def stream_reply(subscription, abandoned: Abandoned = None) -> Reply:
    """Relay the subscribed events as an SSE stream, once the first is there; `abandoned`
    is awaited if the stream stops before the run's end (the client left)."""
    try:
        first = await first_entry(subscription)
    except BaseException:
        subscription.close()
        raise
    if first.error is not None:
        subscription.close()
        raise failure_of(first)
    return Reply(200, SSE_HEADERS, stream=_sse_body(subscription, first, abandoned))


def resume_reply(subscription, abandoned: Abandoned = None) -> Reply:
    """Replay the subscribed events, then follow live ones until the end.

    Unlike a fresh stream it answers at once: the run may still be queued behind others,
    and keep-alives hold the connection meanwhile."""
    return Reply(200, SSE_HEADERS, stream=_sse_body(subscription, None, abandoned))


async def final_reply(subscription) -> Reply:
    """Wait for the run to end; the final response object as JSON, or raise the error."""
    response_id = subscription.response_id
    try:
        first = await first_entry(subscription)
        terminal = None
        async with aclosing(batches(subscription, first, counted=False)) as relayed:
            async for batch in relayed:
                if batch is KEEPALIVE:
                    continue
                if batch.error is not None:
                    raise batch.error
                terminal = batch.terminal
    finally:
        subscription.close()
    if terminal is None:  # ended without a terminal event: cancelled
        raise APIError(f"Response {response_id} was cancelled.", status=409,
                       code="response_cancelled")
    resource = orjson.loads(terminal)["response"]
    if resource["status"] == "failed":
        error = resource["error"]
        raise APIError(f"Response {resource['id']} failed: {error['message']}",
                       status=504 if error["code"] == "request_timeout" else 502,
                       type="server_error", code=error["code"])
    return json_reply(200, resource)


async def _sse_body(subscription, first: Entry | None, abandoned: Abandoned):
    finished = False
    try:
        async with aclosing(batches(subscription, first)) as relayed:
            async for batch in relayed:
                if batch is KEEPALIVE:
                    yield framing.KEEPALIVE
                elif batch.end:
                    yield framing.sse(batch.events) + framing.DONE
                elif batch.events:
                    yield framing.sse(batch.events)
        finished = True
    finally:
        subscription.close()
        if not finished and abandoned is not None:
            await abandoned()
