"""One `response.create` frame of a WebSocket, from its JSON to its last event.

The frame is the create body of `POST /v1/responses` with `type` (and `generate`) added
and without `stream` and `background`; it goes through the same steps as an HTTP create
(streaming.create: admission, validation, the row, the run, the subscription), with the
socket's last response as the supplied history when it continues an unstored one. The
run's events go out as the relay hands them (relay.batches), one JSON text frame each
(framing.py: the same objects and sequence numbers as the SSE stream's); an error before
the run started is an `error` frame in OpenAI's WebSocket shape. Under Daphne the events
that arrive while the turn waits are written through from the web's read of the bus, as
an SSE stream's are (`_write_through`; the turn's own frames, its first events and its end
still go through the consumer's send, in order with them: the two never run at once).

Traced, a turn is a trace of its own, as an HTTP request is: its `WEBSOCKET
response.create` server span (linked to the connection's span, which lasts as long as
the socket) is current while it creates the run, so the worker's `run` continues it, and
its relay is a `relay response` span under it (relay_span.py).
"""
import logging
import time
from contextlib import aclosing

import orjson

from observability import tracing
from observability.http import Exchange
from observability.metrics import EVENTS_RELAYED

from . import framing, relay, streaming
from ..bus import KEEPALIVE
from ..bus.entries import failure_of
from ..errors import InvalidRequest, ServerError, as_api_error
from .relay_span import RESPONSE, RelaySpan, response_terminal
from .socket_state import SocketState
from .socket_steer import unsteerable

log = logging.getLogger(__name__)

ROUTE = "v1/responses"
PATH = "/v1/responses"
METHOD = "WEBSOCKET"
SPAN = "WEBSOCKET response.create"
USABLE_STATUSES = {"completed", "incomplete"}


def create_body(frame: dict) -> tuple[bytes, bool]:
    """The create body of a `response.create` frame, and whether to generate."""
    body = {key: value for key, value in frame.items()
            if key not in ("type", "generate", "stream", "stream_options", "stream_id")}
    generate = frame.get("generate", True)
    if not isinstance(generate, bool):
        raise InvalidRequest("'generate' must be a boolean.", param="generate",
                             code="invalid_type")
    if body.get("background"):
        raise InvalidRequest("background is not supported over WebSocket.",
                             param="background", code="invalid_value")
    body.pop("background", None)
    return orjson.dumps(body), generate


class Turn:
    """One response.create of a socket's stream: `run()` sends its frames (each with the
    stream's `stream_id`, when it has one), then updates the socket's state."""

    def __init__(self, socket, state: SocketState, frame: dict, stream_id: str | None):
        self.socket, self.state, self.frame, self.stream_id = socket, state, frame, stream_id
        self.suffix = framing.websocket_suffix(stream_id)
        self.exchange = Exchange(METHOD, None)
        self.previous = frame.get("previous_response_id")
        self.job = self.subscription = None
        # Steering (socket_steer.py): open while the run streams, until its terminal event;
        # the submissions it took; those it carries from a predecessor; whether it started
        # (sent `response.created`); its final response object.
        self.steerable, self.steers, self.carried = False, [], []
        self.started, self.final = False, None
        self.last_event: bytes | None = None  # the last event sent (its terminal one)
        self.status = 200  # as an HTTP create would have answered, for metrics and the log
        self.refusal = None  # the error of a run that failed before it started

    async def run(self) -> None:
        with tracing.turn_span(SPAN, self._span_attributes()) as span:
            error = None
            try:
                await self._run()
            except Exception as exc:
                error = as_api_error(exc)
                if error is None:
                    log.exception("websocket turn failed")
                    error = ServerError("The server had an error while processing your "
                                        "request.")
                self.status = error.status
                self.state.evict(self.previous)
                await self.send(framing.websocket_error(error))
                await self.socket.refused(error)
            finally:
                self.steerable = False
                if self.subscription is not None:
                    self.subscription.close()
                self.exchange.answered(ROUTE, PATH, self.status)
                if span is not None:
                    self._end_span(span, error)

    def _span_attributes(self) -> dict:
        attributes = {"gateway.request.id": self.exchange.request_id}
        if self.stream_id is not None:
            attributes["gateway.websocket.stream_id"] = self.stream_id
        return attributes

    def _end_span(self, span, error) -> None:
        """The turn's outcome on its span: the response, the status an HTTP create would
        have answered, the error's code (an error status from 500 on, as a server span's)."""
        if self.job is not None:
            span.set_attribute("gateway.response.id", self.job.id)
        span.set_attribute("gateway.websocket.status", self.status)
        error = error or self.refusal
        if error is not None:
            if error.status >= 500:
                tracing.failed(span, error.code or error.type)
            else:
                span.set_attribute("error.type", error.code or error.type)

    async def send(self, event: bytes) -> None:
        """One frame to the client: an event's JSON, tagged with the stream it belongs to."""
        await self.socket.send_text(framing.websocket_text(event, self.suffix))

    async def _run(self) -> None:
        body, generate = create_body(self.frame)
        continued = self.state.continues(self.previous)
        history = None if continued is None else await self.state.history(continued)
        job, request, self.subscription = await streaming.create(
            self.socket.authorization, body, self.exchange, history, generate,
            steerable=unsteerable(self.frame) is None)
        self.job = job
        if not generate:
            self.started = True
            await self._prepared(job, continued)
            return
        self.steerable = True
        resource = self.final = await self._relay()
        if resource is None or resource["status"] not in USABLE_STATUSES:
            self.state.evict(self.previous)
        elif request.conversation_id is None:
            self.state.remember(self.stream_id, job.id, job.store, continued, self.previous,
                                job.input_items + list(resource.get("output") or []))

    async def _relay(self) -> dict | None:
        """Send the run's events; the final response object (None: it ended without one)."""
        span = RelaySpan(RESPONSE, self.subscription.response_id, "websocket")
        first = await relay.first_entry(self.subscription)
        if first.error is not None:  # the run failed before it started (e.g. upstream 429)
            error = self.refusal = failure_of(first)
            self.status = error.status
            await self.send(framing.websocket_error(error))
            return None
        span.first()
        self.started = True
        self._write_through(span)
        try:
            async with aclosing(relay.batches(self.subscription, first, span)) as batches:
                async for batch in batches:
                    if batch is KEEPALIVE:
                        continue
                    events, entry = batch
                    if entry.end and entry.error is None:  # steering closes before the end
                        self.steerable = False
                    for event in events:
                        await self.send(event)
                    if events:
                        self.last_event = events[-1]
            span.end_with(entry, response_terminal)
        except BaseException as exc:
            span.raised(exc)
            raise
        if entry.error is not None:  # the bus failed under us
            return None
        last = self.last_event
        event = orjson.loads(last) if last is not None else {}
        return event.get("response") if event.get("type") != "error" else None

    def _write_through(self, span: RelaySpan) -> None:
        """Under Daphne, have the run's events that arrive while this turn waits written
        as frames at once by the bus reader's pass (Subscription.direct), each entry's in
        one write, rather than each entry waking the turn's task, which then sends each
        event through Channels' and Daphne's send coroutines and autobahn's framing.
        Entries with the run's end (the turn's steering closes first) or an error still
        come to the task. Measured: docs/architecture.md's ledger ("WebSocket
        write-through")."""
        write = self.socket.frame_writer
        if write is None:
            return
        socket, suffix, frame = self.socket, self.suffix, framing.websocket_frame

        def direct(entry) -> bool:
            events = entry.events
            if not events:
                return True
            if not socket.closing and not write([frame(event, suffix) for event in events]):
                return False  # not open: the task's send meets it, as before
            self.last_event = events[-1]
            EVENTS_RELAYED.inc(len(events))
            span.events += len(events)
            return True

        self.subscription.direct = direct

    async def _prepared(self, job, continued) -> None:
        """generate=false: the response as prepared, with no output, and kept on the
        socket so the next turn can continue it."""
        resource = dict(job.resource, status="completed", completed_at=int(time.time()),
                        usage=_no_usage())
        created = dict(job.resource, status="in_progress")
        events = [{"type": "response.created", "response": created},
                  {"type": "response.in_progress", "response": created},
                  {"type": "response.completed", "response": resource}]
        for number, event in enumerate(events):
            await self.send(orjson.dumps({**event, "sequence_number": number}))
        if job.conversation_id is None:
            self.state.remember(self.stream_id, job.id, False, continued, self.previous,
                                job.input_items)

    def cancel_if_unstored(self):
        """The socket closed: a store=false run nobody can read any more is stopped."""
        job = self.job
        if job is not None and not job.store and self.subscription is not None:
            return streaming.cancel_abandoned(job.id)
        return None


def _no_usage() -> dict:
    return {"input_tokens": 0, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 0, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 0}
