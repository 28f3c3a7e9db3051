"""Framing a response's events for a wire: the only place the bus's currency (each event
the JSON bytes of its object, translation.numbering) gets a transport's envelope.

SSE: one block `event: <type>\ndata: <json>\n\n` per event (one `data:` line: the JSON has
no raw newline), `data: [DONE]` after the end, a comment as keep-alive; the Chat
Completions API's SSE has no `event:` line (sse_data, and sse_comment for its tool
activity). WebSocket: one text frame per event, its JSON as it is, with the socket
stream's `stream_id` added last when the turn has one. Both by concatenation: nothing is
parsed again. And an error on a WebSocket: OpenAI's `error` event (websocket_error).
"""
import orjson

from ..errors import APIError

DONE = b"data: [DONE]\n\n"
KEEPALIVE = b": keep-alive\n\n"
TYPE_PREFIX = b'{"type":"'  # how the event builders begin every event (`type` first)


def sse(events: list[bytes]) -> bytes:
    """The SSE blocks of `events` (formatting with % is ~3x faster here than `+`; one
    event, the most common batch under pacing, without a list)."""
    if len(events) == 1:
        event = events[0]
        if event.startswith(TYPE_PREFIX):
            return b"event: %s\ndata: %s\n\n" % (event[9:event.index(b'"', 9)], event)
    return b"".join([b"event: %s\ndata: %s\n\n" % (event_type(event), event)
                     for event in events])


def sse_data(event: bytes) -> bytes:
    """One event as a data-only SSE block (the Chat Completions API's chunks)."""
    return b"data: %s\n\n" % event


def sse_comment(text: str) -> bytes:
    """An SSE comment block (clients ignore it); `text` is one line."""
    return b": %s\n\n" % text.encode()


def event_type(event: bytes) -> bytes:
    """An event's `type`: read off its first key (a JSON string without escapes: event
    types are plain names), or parsed out if `type` is not first."""
    if event.startswith(TYPE_PREFIX):
        return event[9:event.index(b'"', 9)]
    return orjson.loads(event)["type"].encode()


def websocket_suffix(stream_id: str | None) -> bytes | None:
    """What closes each event's object on a socket stream: `,"stream_id":…}`, or None."""
    if stream_id is None:
        return None
    return b',"stream_id":' + orjson.dumps(stream_id) + b"}"


def websocket_error(exc: APIError) -> bytes:
    """OpenAI's WebSocket error event: `{"type": "error", "status", "error": {...}}`, with
    the headers an HTTP answer would carry (Retry-After, the rate limits) in
    `error.headers`."""
    error = exc.body["error"]
    if exc.headers:
        error["headers"] = {str(k).lower(): str(v) for k, v in exc.headers.items()}
    return orjson.dumps({"type": "error", "status": exc.status, "error": error})


def websocket_frame(event: bytes, suffix: bytes | None) -> bytes:
    """One event as a WebSocket text frame's UTF-8 payload (its object closed by `suffix`
    when given)."""
    return event if suffix is None else event[:-1] + suffix


def websocket_text(event: bytes, suffix: bytes | None) -> str:
    """One event as a WebSocket text frame (its object closed by `suffix` when given)."""
    return websocket_frame(event, suffix).decode()
