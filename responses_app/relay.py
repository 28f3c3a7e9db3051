"""Relaying a response's events from the bus to the client: as SSE, or as one JSON body.

The relay waits for the run's first entry before answering, so an upstream that fails
before it starts becomes a plain HTTP error (a 429 stays a 429) instead of a stream.
Then entries are written as they arrive, whole SSE blocks only, with a keep-alive comment
whenever nothing flowed for SSE_KEEPALIVE_SECONDS, and `data: [DONE]` after the end.
"""
from django.conf import settings
from django.http import JsonResponse, StreamingHttpResponse

from .bus import KEEPALIVE, event_bus
from .bus.entries import Entry
from .errors import ServiceUnavailable, error_body
from .translation.sse import DONE, KEEPALIVE as KEEPALIVE_BYTES, event_of_block, split_blocks

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


async def stream_events(response_id: str, after: int = -1):
    """The HTTP response relaying `response_id`'s events after sequence number `after`."""
    subscription = await event_bus().subscribe(response_id, after)
    try:
        first = await _first_entry(subscription)
    except BaseException:
        subscription.close()
        raise
    if first.error is not None:
        subscription.close()
        return _error_response(first)
    response = StreamingHttpResponse(_sse_body(subscription, first),
                                     content_type="text/event-stream")
    for name, value in SSE_HEADERS.items():
        response[name] = value
    return response


async def final_response(response_id: str):
    """Wait for the run to end; the final response object as JSON, or the error."""
    subscription = await event_bus().subscribe(response_id, -1)
    try:
        entry = await _first_entry(subscription)
        while not entry.end:
            entry = await subscription.get()
    finally:
        subscription.close()
    if entry.error is not None:
        return _error_response(entry)
    resource = event_of_block(split_blocks(entry.data)[-1])["response"]
    if resource["status"] == "failed":
        error = resource["error"]
        status = 504 if error["code"] == "request_timeout" else 502
        return JsonResponse(error_body(
            f"Response {resource['id']} failed: {error['message']}", "server_error", None,
            error["code"]), status=status)
    return JsonResponse(resource)


async def _first_entry(subscription) -> Entry:
    entry = await subscription.get(settings.UPSTREAM_TIMEOUT + settings.UPSTREAM_CONNECT_TIMEOUT)
    if entry is KEEPALIVE:
        raise ServiceUnavailable("No worker started this response in time; retry shortly.")
    return entry


def _error_response(entry: Entry) -> JsonResponse:
    error = entry.error
    response = JsonResponse(error["body"], status=error["status"])
    for name, value in (error.get("headers") or {}).items():
        response[name] = value
    return response


async def _sse_body(subscription, first: Entry):
    keepalive = settings.SSE_KEEPALIVE_SECONDS
    queue = subscription.queue
    entry = first
    try:
        while True:
            if entry is KEEPALIVE:
                yield KEEPALIVE_BYTES
            elif entry.error is not None:
                return  # the bus failed under us; the client can resume or GET the response
            else:
                chunks = [entry.data]
                while not entry.end and not queue.empty():
                    entry = queue.get_nowait()
                    if entry.error is not None:
                        break
                    chunks.append(entry.data)
                if entry.end and entry.error is None:
                    chunks.append(DONE)
                yield b"".join(chunks)
                if entry.end:
                    return
            entry = await subscription.get(keepalive)
    finally:
        subscription.close()
