"""Numbering and framing of stream events: the one place sequence numbers are stamped.

Each event becomes one SSE block `event: <type>\ndata: <json>\n\n` (one `data:` line: JSON
has no raw newlines), so a batch of blocks can be written, stored and replayed as bytes.
"""
import orjson

DONE = b"data: [DONE]\n\n"
KEEPALIVE = b": keep-alive\n\n"


class EventStamper:
    """Gives events sequence numbers 0, 1, 2… and renders them as SSE bytes."""

    def __init__(self, next_sequence_number: int = 0):
        self.next_sequence_number = next_sequence_number

    def render(self, events: list[dict]) -> bytes:
        blocks = []
        for event in events:
            event["sequence_number"] = self.next_sequence_number
            self.next_sequence_number += 1
            blocks.append(b"event: %s\ndata: %s\n\n" % (event["type"].encode(), orjson.dumps(event)))
        return b"".join(blocks)


def split_blocks(data: bytes) -> list[bytes]:
    """The SSE blocks of a rendered batch, each with its trailing blank line."""
    return [block + b"\n\n" for block in data.split(b"\n\n") if block]


def event_of_block(block: bytes) -> dict:
    """The event dict inside one rendered block."""
    return orjson.loads(block[block.index(b"\ndata: ") + 7:])
