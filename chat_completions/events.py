"""What a chat completion's run puts on the bus, and how the front frames it.

The run's events are JSON objects (the bus's currency; framed only at the edge): the
completion's `chat.completion.chunk` objects, `{"error": ...}` for a failure after the
stream started (OpenAI streams errors that way), `{"object": "gateway.comment", "text"}`
for tool activity (an SSE comment line: clients ignore it, a person reading the stream
sees each MCP call and its outcome), and last the whole `chat.completion` (what a
non-streaming client gets; a streaming one gets `[DONE]` instead).

Entries hold events as JSON separated by blank lines (no raw newline in JSON), so the
bus's entries split and resume as they do for responses (entries.Entry.after). This
module is the one place that knows that layout.
"""
import orjson

from responses_app.bus.entries import Entry

COMMENT = "gateway.comment"
COMPLETION = "chat.completion"
DONE = b"data: [DONE]\n\n"


class ChatStamper:
    """Numbers a chat run's events 0, 1, 2… into bus entries."""

    def __init__(self):
        self.next_sequence_number = 0

    def entry(self, events: list[dict], end: bool = False) -> Entry:
        first = self.next_sequence_number
        self.next_sequence_number += len(events)
        data = b"".join(orjson.dumps(event) + b"\n\n" for event in events)
        return Entry(first, self.next_sequence_number - 1, data, end)


def events_of(data: bytes) -> list[dict]:
    """The events of an entry's data."""
    return [orjson.loads(block) for block in data.split(b"\n\n") if block]


def comment(text: str) -> dict:
    """A comment event (one line: its newlines become spaces)."""
    return {"object": COMMENT, "text": " ".join(text.splitlines())}


def sse(data: bytes) -> bytes:
    """An entry's events framed for an SSE client: chunks and errors as `data:` lines,
    comments as comment lines; the final completion is not sent (the stream's `[DONE]`
    follows it)."""
    frames = []
    for block in data.split(b"\n\n"):
        if not block:
            continue
        if block.startswith(b'{"object":"gateway.comment"'):
            frames.append(b": " + orjson.loads(block)["text"].encode() + b"\n\n")
        elif block.startswith(b'{"object":"chat.completion",'):
            continue
        else:
            frames.append(b"data: " + block + b"\n\n")
    return b"".join(frames)
