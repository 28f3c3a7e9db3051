"""A chat completion's events from the bus to its client: SSE (`data: <chunk>` lines,
comment lines for tool activity, `: keep-alive` while nothing flows, `data: [DONE]` after
the last chunk), or the final `chat.completion` as one JSON body.

As for responses (responses_app.api.relay), the answer waits for the run's first entry,
so an upstream that refuses before it starts is a plain HTTP error (a 429 stays a 429).
A failure after the stream started is one `data: {"error": ...}` event, and no `[DONE]`.
"""
import asyncio
import time

from django.conf import settings

from observability.metrics import ACTIVE_STREAMS
from responses_app.api.relay import SSE_HEADERS, Reply, json_reply
from responses_app.bus import KEEPALIVE
from responses_app.errors import ServiceUnavailable, error_body
from responses_app.translation.sse import KEEPALIVE as KEEPALIVE_BYTES

from .events import COMPLETION, DONE, events_of, sse

# A failure after the run started (an upstream turn after MCP calls, a stream cut short),
# answered to a client waiting for the whole completion: the status its code stands for.
ERROR_STATUS = {"request_timeout": 504, "upstream_timeout": 504, "cancelled": 409,
                "rate_limit_exceeded": 429, "upstream_invalid_request": 400,
                "model_not_found": 404}


async def stream_reply(subscription, abandoned=None) -> Reply:
    try:
        first = await _first_entry(subscription)
    except BaseException:
        subscription.close()
        raise
    if first.error is not None:
        subscription.close()
        return _error_reply(first.error)
    return Reply(200, SSE_HEADERS, stream=_sse_body(subscription, first, abandoned))


async def final_reply(subscription) -> Reply:
    try:
        entry = await _first_entry(subscription)  # the run's `started` comment, or its end
        async with asyncio.timeout(settings.RUN_DEADLINE_SECONDS):  # a worker that died
            while not entry.end:
                entry = await subscription.get()
    except TimeoutError:
        return json_reply(504, error_body("The chat completion did not end in time.",
                                          "server_error", None, "run_deadline_exceeded"))
    finally:
        subscription.close()
    if entry.error is not None:
        return _error_reply(entry.error)
    events = events_of(entry.data)
    last = events[-1] if events else {"error": {
        "message": "The chat completion was cancelled.", "type": "invalid_request_error",
        "param": None, "code": "cancelled"}}
    if last.get("object") == COMPLETION:
        return json_reply(200, last)
    return json_reply(ERROR_STATUS.get(last["error"].get("code"), 502), last)


async def _first_entry(subscription):
    entry = await subscription.get(settings.UPSTREAM_TIMEOUT + settings.UPSTREAM_CONNECT_TIMEOUT)
    if entry is KEEPALIVE:
        raise ServiceUnavailable("No worker started this chat completion in time; retry shortly.")
    return entry


def _error_reply(error: dict) -> Reply:
    return json_reply(error["status"], error["body"], error.get("headers"))


async def _sse_body(subscription, entry, abandoned):
    keepalive = settings.SSE_KEEPALIVE_SECONDS
    deadline = time.monotonic() + settings.RUN_DEADLINE_SECONDS  # a worker that died
    finished = False
    ACTIVE_STREAMS.inc()
    try:
        while True:
            if entry is KEEPALIVE:
                if time.monotonic() > deadline:
                    finished = True
                    return  # ends without [DONE]: the client sees an incomplete stream
                yield KEEPALIVE_BYTES
            elif entry.error is not None:
                finished = True
                return  # the bus failed under us: the connection ends without [DONE]
            else:
                blocks = [entry.data]
                while not entry.end and subscription.pending:  # what else arrived: one write
                    entry = subscription.pending.popleft()
                    if entry.error is not None:
                        break
                    blocks.append(entry.data)
                data = sse(b"".join(blocks))
                if entry.end and entry.error is None:
                    finished = True
                    if _completed(entry.data):
                        data += DONE
                    if data:
                        yield data
                    return
                if data:
                    yield data
                if entry.error is not None:
                    finished = True
                    return
            entry = await subscription.get(keepalive)
    finally:
        ACTIVE_STREAMS.dec()
        subscription.close()
        if not finished and abandoned is not None:
            await abandoned()


def _completed(data: bytes) -> bool:
    """Whether the end entry's last event is the completion (not an error)."""
    last = data.rstrip(b"\n").rsplit(b"\n\n", 1)[-1]
    return last.startswith(b'{"object":"chat.completion",')
