"""The trace span of one response relayed on the web: how its events reached their client.

One span per stream a front relays: `relay response` (an SSE stream of `POST
/v1/responses`, a resume `GET /v1/responses/{id}?stream=true`, a WebSocket turn) or
`relay chat.completion` (an SSE stream of `POST /v1/chat/completions`). It is a child of
the request's span (the HTTP server span, or the WebSocket turn's: socket_turn.py), whose
context the run's message carries to the worker (delivery/dispatch.py): the relay, the
worker's `run` and its upstream calls are one trace. A stream that never started (the
run failed or was not taken before its first event: a plain HTTP error, or the turn's
`error` frame) has no relay span; its request's span says so.

Attributes (OpenTelemetry's style, the gateway's prefix): `gateway.response.id`,
`gateway.relay.transport` (`sse`, `websocket`), `gateway.relay.events` (the run's events
sent, each one SSE block or WebSocket frame; a chat completion's last, the whole
`chat.completion`, is its `[DONE]`), `gateway.relay.first_event_wait_ms` (from the
relay's start to the run's first entry in hand), `gateway.relay.outcome` (OUTCOMES),
`gateway.relay.starting_after` (a resume's cursor); `error.type` and an error status when
the response failed, the bus failed under the relay, the run's deadline passed with only
keep-alives, or the relay raised. The outcome is told by what the relay's last entry is
(`ended_so`), never by when it came: a resume that starts after its stream's end sends no
event but carries the outcome of that end's terminal event, and an error entry is the
bus's failure (`bus_error`) or the run's (`failed`) whether events came before it or not.

Cost: the relay adds each batch's event count to `events` (relay.batches and the
write-through callbacks), an integer increment; the rest is once per response. The span
is recorded at the relay's end, from the start time taken at its beginning: an SSE body is
an async generator, which, never started, never runs its `finally` (a span begun before
it would then never end), and every attribute is known only then. Off (tracing.py), the
increment is all that runs.
"""
import time

import orjson

from observability import tracing

from ..bus.entries import Entry, is_bus_failure
from . import framing

RESPONSE = "relay response"
CHAT_COMPLETION = "relay chat.completion"

COMPLETED = "completed"
INCOMPLETE = "incomplete"
FAILED = "failed"  # its terminal event says it failed (or the run's error entry: it failed
# before it started)
CANCELLED = "cancelled"  # the run's end came without a terminal event
DISCONNECTED = "client_disconnected"
BUS_ERROR = "bus_error"  # the bus failed under the relay: the stream stops without its end
KEEPALIVE_TIMEOUT = "keepalive_timeout"  # the run's deadline passed with only keep-alives
RAISED = "error"  # the relay itself raised
OUTCOMES = (COMPLETED, INCOMPLETE, FAILED, CANCELLED, DISCONNECTED, BUS_ERROR,
            KEEPALIVE_TIMEOUT, RAISED)
# Outcomes that are errors when no code says more (`error.type`)
ERRORS = {BUS_ERROR: "bus_error", KEEPALIVE_TIMEOUT: "run_deadline_exceeded"}


class RelaySpan:
    """One relay's span, recorded by `end`; `events` the relay's count (it adds each
    batch's); `first()` when the run's first entry is in hand."""

    __slots__ = ("name", "response_id", "transport", "starting_after", "events", "since",
                 "first_wait_ms")

    def __init__(self, name: str, response_id: str, transport: str,
                 starting_after: int | None = None):
        self.name, self.response_id, self.transport = name, response_id, transport
        self.starting_after = starting_after
        self.events = 0
        self.since = time.time_ns() if tracing.active() else 0  # 0: nothing to record
        self.first_wait_ms = None

    def first(self) -> None:
        """The run's first entry is in hand: the first-event wait ends."""
        if self.since and self.first_wait_ms is None:
            self.first_wait_ms = round((time.time_ns() - self.since) / 1e6, 3)

    def end(self, outcome: str, error_type: str | None = None) -> None:
        """Record the span: the relay ended so (`error_type`: it failed, with this code);
        once (later calls do nothing)."""
        if not self.since:
            return
        attributes = {"gateway.response.id": self.response_id,
                      "gateway.relay.transport": self.transport,
                      "gateway.relay.events": self.events, "gateway.relay.outcome": outcome}
        if self.starting_after is not None:
            attributes["gateway.relay.starting_after"] = self.starting_after
        if self.first_wait_ms is not None:
            attributes["gateway.relay.first_event_wait_ms"] = self.first_wait_ms
        tracing.past_span(self.name, self.since, attributes,
                          error_type or ERRORS.get(outcome))
        self.since = 0

    def end_with(self, last: Entry, terminal, passed_end: bytes | None = None) -> None:
        """Record the span of a relay whose last entry was `last` (an end, or an error
        entry); `terminal(event)` is (outcome, error type) of a terminal event; `passed_end`
        a resume's stream's last event when the stream ended at or before its cursor."""
        if self.since:
            self.end(*ended_so(last, terminal, passed_end))

    def raised(self, exc: BaseException) -> None:
        """Record the span of a relay stopped by `exc`: its client left (a cancelled task,
        a closed generator), or the relay's own error."""
        if isinstance(exc, Exception):
            self.end(RAISED, type(exc).__qualname__)
        else:
            self.end(DISCONNECTED)


def ended_so(last: Entry, terminal, passed_end: bytes | None = None) -> tuple[str, str | None]:
    """(outcome, error type) of a relay whose last entry was `last` (RelaySpan.end_with),
    by what the entry is: the bus's failure under the relay (whether events came before it
    or not), a run's error entry (it failed before it started), an end with the terminal
    event, or an end without events: a resume after the stream's end (Subscription's
    `passed_end`, that end's last event) or a run that ended without a terminal event."""
    if last.error is not None:
        code = last.error["body"]["error"].get("code") or "error"
        return (BUS_ERROR if is_bus_failure(last) else FAILED), code
    event = last.events[-1] if last.events else passed_end
    return (CANCELLED, None) if event is None else terminal(event)


def response_terminal(event: bytes) -> tuple[str, str | None]:
    """How a Responses stream ended, by its terminal event: (outcome, error type)."""
    kind = framing.event_type(event)
    if kind == b"response.completed":
        return COMPLETED, None
    if kind == b"response.incomplete":
        return INCOMPLETE, None
    body = orjson.loads(event)  # response.failed, or an `error` event
    error = (body.get("response") or {}).get("error") or body.get("error") or body
    return FAILED, (error.get("code") if isinstance(error, dict) else None) or FAILED
