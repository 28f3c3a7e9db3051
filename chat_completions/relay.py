"""A chat completion's events from the bus to its client, on the Responses front's one
relay iterator (responses_app.api.relay.batches): SSE (`data: <chunk>` blocks, comment
lines for tool activity, `: keep-alive` while nothing flows, `data: [DONE]` after the
last chunk; framed by events.sse at this edge), or the final `chat.completion` as one
JSON body.

As for responses, the answer waits for the run's first entry, so an upstream that refuses
before it starts is a plain HTTP error (a 429 stays a 429): the APIError is raised and
rendered as every view's error is (errors.error_response). A failure after the stream
started is one `data: {"error": ...}` event, and no `[DONE]`; a client waiting for the
whole completion gets it as the HTTP error its code stands for. A stream is traced by one
`relay chat.completion` span (responses_app/api/relay_span.py).
"""
import asyncio
import time
from contextlib import aclosing

import orjson
from django.conf import settings

from responses_app.api import framing
from responses_app.api.relay import (
    SSE_HEADERS, Abandoned, Reply, batches, first_entry, started_entry,
)
from responses_app.api.relay_span import (
    CHAT_COMPLETION, COMPLETED, FAILED, KEEPALIVE_TIMEOUT, RelaySpan,
)
from responses_app.bus import KEEPALIVE
from responses_app.bus.entries import failure_of
from responses_app.errors import CRASHED, APIError

from .events import is_completion, sse

WHAT = "chat completion"
JSON_HEADERS = [(b"content-type", b"application/json")]
# A failure after the run started (an upstream turn after MCP calls, a stream cut short),
# answered to a client waiting for the whole completion: the status its code stands for.
ERROR_STATUS = {"request_timeout": 504, "upstream_timeout": 504, "cancelled": 409,
                "rate_limit_exceeded": 429, "upstream_invalid_request": 400,
                "model_not_found": 404}


async def stream_reply(subscription, abandoned: Abandoned = None) -> Reply:
    """The SSE stream, once the run started; under Daphne its chunks that arrive while it
    waits are written through as a Responses stream's are (relay.write_through, framed by
    events.sse): web CPU per response at 50 ms pacing, 100 held streams, 12.9 vs 23.8 ms
    (2026-11-27; docs/architecture.md's ledger, "SSE write-through")."""
    span = RelaySpan(CHAT_COMPLETION, subscription.response_id, "sse")
    first = await started_entry(subscription, WHAT)
    span.first()
    return Reply(200, SSE_HEADERS, stream=_sse_body(subscription, first, abandoned, span),
                 subscription=subscription, frame=sse, span=span)


async def final_reply(subscription) -> Reply:
    """Wait for the run to end: the `chat.completion` as JSON (its bytes as the bus has
    them), or raise the error it ended with."""
    terminal = None
    try:
        first = await first_entry(subscription, WHAT)  # the run's `started` comment, or its end
        async with asyncio.timeout(settings.RUN_DEADLINE_SECONDS):  # a worker that died
            async with aclosing(batches(subscription, first)) as relayed:
                async for batch in relayed:
                    if batch is KEEPALIVE:
                        continue
                    events, last = batch
                    if last.error is not None:
                        raise failure_of(last)
                    if last.end and events:
                        terminal = events[-1]
    except TimeoutError:
        raise APIError("The chat completion did not end in time.", status=504,
                       type="server_error", code="run_deadline_exceeded") from None
    finally:
        subscription.close()
    if terminal is None:  # ended without an event: cancelled
        raise APIError("The chat completion was cancelled.", status=409, code="cancelled")
    if is_completion(terminal):
        return Reply(200, JSON_HEADERS, terminal)
    body = orjson.loads(terminal)  # {"error": ...}: the run's own bug a 500, else a 502
    error = body["error"]
    raise APIError.of_body(ERROR_STATUS.get(error.get("code"),
                                            500 if error.get("message") == CRASHED else 502), body)


async def _sse_body(subscription, first, abandoned: Abandoned, span: RelaySpan):
    deadline = time.monotonic() + settings.RUN_DEADLINE_SECONDS  # a worker that died
    finished = False
    try:
        async with aclosing(batches(subscription, first, span)) as relayed:
            async for batch in relayed:
                if batch is KEEPALIVE:
                    if time.monotonic() > deadline:
                        # ends without [DONE]: the client sees an incomplete stream
                        span.end(KEEPALIVE_TIMEOUT)
                        break
                    yield framing.KEEPALIVE
                    continue
                events, last = batch  # last.error: the bus failed under us, no [DONE]
                data = sse(events)
                if last.error is None and last.end and events and is_completion(events[-1]):
                    data += framing.DONE
                if data:
                    yield data
        finished = True
        span.end_with(last, _terminal)
    except BaseException as exc:
        span.raised(exc)
        raise
    finally:
        subscription.close()
        if not finished and abandoned is not None:
            await abandoned()


def _terminal(event: bytes) -> tuple[str, str | None]:
    """How a chat completion's stream ended, by its last event: the completion, or the
    `{"error": ...}` of a failure after it started."""
    if is_completion(event):
        return COMPLETED, None
    error = orjson.loads(event).get("error")
    return FAILED, (error.get("code") if isinstance(error, dict) else None) or FAILED
