"""A response's stored event stream as rows: sequence number, type, when, and what it says.

Read whole from the event bus while it keeps the stream (EVENT_RETENTION_SECONDS after the
run). Events travel in entries (a batch written together), so events of one entry share
their time: the bus stamps entries, not events.
"""
from dataclasses import dataclass

import orjson

from ..bus import event_bus
from .items import pretty_json

MAX_EVENTS_SHOWN = 5_000
TEXT_KEYS = ("delta", "text", "arguments", "refusal")


@dataclass
class EventRow:
    sequence_number: int
    type: str
    offset_ms: float | None  # since the first entry
    summary: str
    json: str


@dataclass
class EventLog:
    rows: list[EventRow]
    expires_in: float | None
    error: dict | None  # the HTTP error a run answered with before it started
    truncated: bool


def _summary(event: dict) -> str:
    for key in TEXT_KEYS:
        if isinstance(event.get(key), str):
            return event[key]
    if isinstance(event.get("item"), dict):
        item = event["item"]
        return f"{item.get('type', '')} {item.get('id', '')}".strip()
    if isinstance(event.get("response"), dict):
        return event["response"].get("status") or ""
    return ""


def stored_events(response_id: str) -> EventLog | None:
    """The retained events of a response, oldest first; None once the bus dropped them."""
    log = event_bus().read_retained(response_id)
    if log is None:
        return None
    start = next((entry.at for entry in log.entries if entry.at is not None), None)
    rows, error, truncated = [], None, False
    for entry in log.entries:
        if entry.error is not None:
            error = entry.error
            continue
        offset = None if entry.at is None or start is None else (entry.at - start) * 1000
        for stamped in entry.events:
            if len(rows) >= MAX_EVENTS_SHOWN:
                truncated = True
                break
            event = orjson.loads(stamped)
            rows.append(EventRow(event.get("sequence_number", -1), event.get("type", ""),
                                 offset, _summary(event), pretty_json(event)))
    return EventLog(rows=rows, expires_in=log.expires_in, error=error, truncated=truncated)
