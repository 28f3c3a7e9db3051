"""What a chat completion's run puts on the bus, and how its front frames it.

The run's events are the bus's currency, each the JSON bytes of its object (bus.entries;
framed only at the edge): the completion's `chat.completion.chunk` objects,
`{"error": ...}` for a failure after the stream started (OpenAI streams errors that way),
`{"object": "gateway.comment", "text"}` for tool activity (an SSE comment line: clients
ignore it, a person reading the stream sees each MCP call and its outcome), and last the
whole `chat.completion` (what a non-streaming client gets; a streaming one gets `[DONE]`
instead). Chat chunks carry no sequence number: the stamper numbers entries only (the
bus's resume and de-duplication), not the objects.
"""
import orjson

from responses_app.api import framing
from responses_app.bus.entries import Entry

COMMENT = "gateway.comment"
COMPLETION = "chat.completion"
COMMENT_PREFIX = b'{"object":"gateway.comment"'
COMPLETION_PREFIX = b'{"object":"chat.completion",'


class ChatStamper:
    """Numbers a chat run's events 0, 1, 2… into bus entries."""

    def __init__(self):
        self.next_sequence_number = 0

    def entry(self, events: list[dict], end: bool = False) -> Entry:
        first = self.next_sequence_number
        self.next_sequence_number += len(events)
        return Entry(first, self.next_sequence_number - 1,
                     [orjson.dumps(event) for event in events], end)


def events_of(events: list[bytes]) -> list[dict]:
    """The objects of an entry's events."""
    return [orjson.loads(event) for event in events]


def comment(text: str) -> dict:
    """A comment event (one line: its newlines become spaces)."""
    return {"object": COMMENT, "text": " ".join(text.splitlines())}


def is_completion(event: bytes) -> bool:
    """Whether `event` is the final `chat.completion` (not an error)."""
    return event.startswith(COMPLETION_PREFIX)


def sse(events: list[bytes]) -> bytes:
    """Events framed for a Chat Completions SSE client (api/framing.py's data-only form):
    chunks and errors as `data:` lines, comments as comment lines; the final completion is
    not sent (the stream's `[DONE]` follows it)."""
    frames = []
    for event in events:
        if event.startswith(COMMENT_PREFIX):
            frames.append(framing.sse_comment(orjson.loads(event)["text"]))
        elif not event.startswith(COMPLETION_PREFIX):
            frames.append(framing.sse_data(event))
    return b"".join(frames)
