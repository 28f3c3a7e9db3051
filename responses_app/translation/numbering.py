"""Numbering of stream events: the one place sequence numbers are stamped.

A numbered event leaves here as the bytes of its JSON object (orjson's compact form: no raw
newline), the currency of the bus from the run to every front; each front
frames it for its wire (api/framing.py).
"""
import orjson


class EventStamper:
    """Gives events sequence numbers 0, 1, 2… and serializes them."""

    def __init__(self, next_sequence_number: int = 0):
        self.next_sequence_number = next_sequence_number

    def stamp(self, events: list[dict]) -> list[bytes]:
        """`events` numbered in order, each as the JSON bytes of its object."""
        stamped = []
        for event in events:
            event["sequence_number"] = self.next_sequence_number
            self.next_sequence_number += 1
            stamped.append(orjson.dumps(event))
        return stamped
