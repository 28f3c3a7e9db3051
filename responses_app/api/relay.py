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
stream; a front that can write to its connection synchronously may also have the events
that arrive while the stream waits written at once (`write_through`). Each stream is
traced by one span, recorded when it ends (relay_span.py).
"""
import logging
import time
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import AsyncIterator, Awaitable, Callable

import orjson
from django.conf import settings

from observability.metrics import ACTIVE_STREAMS, EVENTS_RELAYED

from ..bus import KEEPALIVE
from ..bus.entries import Entry, failure_of
from ..errors import CRASHED, APIError, ServiceUnavailable
from . import framing
from .relay_span import RESPONSE, RelaySpan, response_terminal

log = logging.getLogger(__name__)

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
    subscription: object = None  # what `stream` relays (write_through)
    frame: Callable[[list], bytes] = framing.sse  # its events as body bytes (write_through)
    span: RelaySpan | None = None  # the stream's span (write_through counts its events)


def json_reply(status: int, payload: dict, headers: dict | None = None) -> Reply:
    extra = [(k.lower().encode(), str(v).encode()) for k, v in (headers or {}).items()]
    return Reply(status, [(b"content-type", b"application/json"), *extra], orjson.dumps(payload))


async def first_entry(subscription, what: str = "response") -> Entry:
    """The run's first entry (events, or the error that ended it before it started). None
    within UPSTREAM_TIMEOUT + UPSTREAM_CONNECT_TIMEOUT: the run is taken back if no worker
    took it yet (`subscription.withdraw`, set by its creator), so that it never runs for a
    client that was told it did not, and a 503 says so. One a worker took meanwhile (it
    waited behind others) is waited for once more as long, the time its worker has to
    publish its first events or its failure (the same upstream timeouts), and relayed as
    usual; nothing then either, the 503 says it may still complete. A take-back that
    fails (Redis or the database away): a 503 at once."""
    wait = settings.UPSTREAM_TIMEOUT + settings.UPSTREAM_CONNECT_TIMEOUT
    began = time.monotonic()
    entry = await subscription.get(wait)
    if entry is not KEEPALIVE:
        return entry
    taken = await _taken_back(subscription, what, wait)
    if taken is None:
        raise ServiceUnavailable(f"No worker started this {what} in time; retry shortly.")
    if taken:
        raise ServiceUnavailable(f"No worker started this {what} in time, and it will not "
                                 "run; retry shortly.")
    entry = await subscription.get(wait)
    if entry is not KEEPALIVE:
        log.warning("%s %s: its run %s, %.1f s after its client began waiting; relayed",
                    what, subscription.response_id, "started late" if entry.error is None
                    else "failed before it started", time.monotonic() - began)
        return entry
    log.warning("%s %s: its run, which a worker has, did not start within %g s more "
                "either; answered 503 (it may still complete)", what,
                subscription.response_id, wait)
    raise ServiceUnavailable(
        f"No worker started this {what} in time; a worker has it now and it may still "
        f"complete: if it is stored, retrieve it by its id, {subscription.response_id}, "
        "rather than retry.")


async def _taken_back(subscription, what: str, wait: float) -> bool | None:
    """Whether the run was taken back (False: a worker has it), None if it could not be
    (nothing to take it back with, or Redis or the database away: it may still run)."""
    withdraw = subscription.withdraw
    if withdraw is None:
        return None
    try:
        withdrawn = await withdraw()
    except Exception as exc:
        log.warning("%s %s: no worker started it in time, and taking its run back "
                    "failed: %s", what, subscription.response_id, exc)
        return None
    if withdrawn:
        log.warning("%s %s: no worker started it in time; its run was taken back", what,
                    subscription.response_id)
    else:
        log.warning("%s %s: no worker started it in time, and its run could not be taken "
                    "back: a worker has it; waiting up to %g s more for its first event",
                    what, subscription.response_id, wait)
    return withdrawn


async def batches(subscription, first: Entry | None = None, span: RelaySpan | None = None):
    """The subscribed events from `first` on as they arrive: what is queued at once is one
    batch `(events, last)`, `last` the batch's last entry (`last.end`: the run's end is
    among them, `last.events[-1]` its terminal event unless it ended without one;
    `last.error`: the bus failed under us, the stream stops without its end: the client
    can resume or GET the response); KEEPALIVE after SSE_KEEPALIVE_SECONDS without any.
    It stops after the batch whose `last.end`. `span`: a stream's (its events counted
    there and in the streams metrics; None: a client waiting for the whole response).
    Iterate it under `contextlib.aclosing`: its metrics settle when the client leaves.

    A tuple rather than an object per batch: at 5 ms pacing a stream is ~200 batches of
    one event, and the relay's cost per batch is what the web spends per event."""
    keepalive = settings.SSE_KEEPALIVE_SECONDS
    if span is not None:
        ACTIVE_STREAMS.inc()
    try:
        entry = first
        while entry is None or entry is KEEPALIVE:  # a resume: the run's first entry
            if entry is KEEPALIVE:
                yield KEEPALIVE
            entry = await subscription.get(keepalive)
        if span is not None:
            span.first()
        while True:
            if entry is KEEPALIVE:
                yield KEEPALIVE
            elif entry.error is not None:
                yield [], entry
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
                yield events, entry
                if span is not None:
                    EVENTS_RELAYED.inc(len(events))
                    span.events += len(events)
                if entry.end:
                    return
            entry = await subscription.get(keepalive)
    finally:
        if span is not None:
            ACTIVE_STREAMS.dec()


async def started_entry(subscription, what: str = "response") -> Entry:
    """The first entry of a run that started; otherwise the subscription is closed and
    what stopped the run is raised (an APIError, rendered by the caller's edge)."""
    try:
        first = await first_entry(subscription, what)
    except BaseException:
        subscription.close()
        raise
    if first.error is not None:
        subscription.close()
        raise failure_of(first)
    return first


async def stream_reply(subscription, abandoned: Abandoned = None) -> Reply:
    """Relay the subscribed events as an SSE stream, once the first is there; `abandoned`
    is awaited if the stream stops before the run's end (the client left)."""
    span = RelaySpan(RESPONSE, subscription.response_id, "sse")
    first = await started_entry(subscription)
    span.first()
    return Reply(200, SSE_HEADERS, stream=_sse_body(subscription, first, abandoned, span),
                 subscription=subscription, span=span)


def resume_reply(subscription, abandoned: Abandoned = None,
                 starting_after: int | None = None) -> Reply:
    """Replay the subscribed events, then follow live ones until the end (`starting_after`:
    the client's cursor, for the span, when it asked for one).

    Unlike a fresh stream it answers at once: the run may still be queued behind others,
    and keep-alives hold the connection meanwhile."""
    span = RelaySpan(RESPONSE, subscription.response_id, "sse", starting_after)
    return Reply(200, SSE_HEADERS, stream=_sse_body(subscription, None, abandoned, span),
                 subscription=subscription, span=span)


def write_through(reply: Reply, write: Callable[[bytes], None]) -> None:
    """Have the events of `reply`'s SSE stream (a response's or a chat completion's) that
    arrive while it waits framed (`reply.frame`) and written by `write` at once, on the
    bus reader's pass over every stream it read (Subscription.direct), rather than each
    waking the stream's task, which then passes them through its front's send. `write`
    takes the bytes of the body and must neither wait nor let anything be written before
    them: the stream's own writes (its start, its first events, keep-alives and its end)
    go through the front as before, in order with these, since the two never run at once.

    Measured (with api/daphne_write.py): the web's CPU per response at 50 ms pacing, 100
    held streams, 12.0 and 10.6 vs 20.1 and 20.4 ms (0.52-0.60x; paired rounds against
    58083d9, 2026-11-27; docs/architecture.md's ledger, "SSE write-through")."""
    frame, span = reply.frame, reply.span

    def direct(entry: Entry) -> None:
        data = frame(entry.events)
        if data:  # an empty write would end a chunked body
            write(data)
        EVENTS_RELAYED.inc(len(entry.events))
        span.events += len(entry.events)

    reply.subscription.direct = direct


async def final_reply(subscription) -> Reply:
    """Wait for the run to end; the final response object as JSON, or raise the error."""
    response_id = subscription.response_id
    try:
        first = await first_entry(subscription)
        terminal = None
        async with aclosing(batches(subscription, first)) as relayed:
            async for batch in relayed:
                if batch is KEEPALIVE:
                    continue
                last = batch[1]
                if last.error is not None:
                    raise failure_of(last)
                if last.end and last.events:
                    terminal = last.events[-1]
    finally:
        subscription.close()
    if terminal is None:  # ended without a terminal event: cancelled
        raise APIError(f"Response {response_id} was cancelled.", status=409,
                       code="response_cancelled")
    resource = orjson.loads(terminal)["response"]
    if resource["status"] == "failed":  # the gateway's own bug a 500, the upstream's a 502
        error = resource["error"]
        status = {"request_timeout": 504}.get(error["code"],
                                              500 if error["message"] == CRASHED else 502)
        raise APIError(f"Response {resource['id']} failed: {error['message']}",
                       status=status, type="server_error", code=error["code"])
    return json_reply(200, resource)


async def _sse_body(subscription, first: Entry | None, abandoned: Abandoned,
                    span: RelaySpan):
    finished = False
    try:
        async with aclosing(batches(subscription, first, span)) as relayed:
            async for batch in relayed:
                if batch is KEEPALIVE:
                    yield framing.KEEPALIVE
                    continue
                events, last = batch
                if last.error is None and last.end:
                    yield framing.sse(events) + framing.DONE
                elif events:
                    yield framing.sse(events)
        finished = True
        span.end_with(last, response_terminal, subscription.passed_end)
    except BaseException as exc:
        span.raised(exc)
        raise
    finally:
        subscription.close()
        if not finished and abandoned is not None:
            await abandoned()
