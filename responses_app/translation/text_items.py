"""The text-like output items while they stream: a message (output text, refusal) or a
reasoning item (reasoning text or summary). `TextSegment` is the open item with its open
content part; the builders here make the item, and append the events that open a part,
carry a piece of text, close the part and close the item. Pure: they change the segment and
its item, and append events to the list they are given, without sequence numbers. Which
item is open, and when one closes for the next, is the state machine's business."""
from dataclasses import dataclass, field

from .part_kinds import OUTPUT_TEXT, PartKind


@dataclass
class TextSegment:
    """The open message or reasoning item and its open content part."""

    item: dict
    output_index: int
    kind: PartKind | None = None
    part: dict | None = None
    part_index: int = -1
    pieces: list = field(default_factory=list)
    logprobs: list = field(default_factory=list)
    # text -> the annotations citing hosted tool results (translation.citations), if any
    annotate: object = None


def new_item(item_type: str, ids) -> tuple[dict, dict]:
    """A new `message` or `reasoning` item, in progress, and its `output_item.added` copy."""
    if item_type == "message":
        item = {"id": ids("msg"), "type": "message", "status": "in_progress",
                "role": "assistant", "content": []}
        return item, {**item, "content": []}
    item = {"id": ids("rs"), "type": "reasoning", "status": "in_progress",
            "summary": [], "content": []}
    return item, {**item, "summary": [], "content": []}


def open_part(events: list, segment: TextSegment, kind: PartKind) -> None:
    """Open a content part of `kind` in the segment's item: its `*part.added` event."""
    part = {"type": kind.part_type, kind.text_field: ""}
    if kind is OUTPUT_TEXT:
        part["annotations"] = []
        part["logprobs"] = []
    parts = segment.item[kind.item_list]
    segment.kind, segment.part, segment.part_index = kind, part, len(parts)
    segment.pieces, segment.logprobs = [], []
    parts.append(part)
    events.append({"type": kind.part_added, "item_id": segment.item["id"],
                   "output_index": segment.output_index,
                   kind.index_field: segment.part_index, "part": dict(part)})


def text_delta(events: list, segment: TextSegment, text: str, logprobs: list | None) -> None:
    """A piece of text for the open part: its `*.delta` event (with logprobs for output text)."""
    kind = segment.kind
    segment.pieces.append(text)
    event = {"type": kind.delta_event, "item_id": segment.item["id"],
             "output_index": segment.output_index, kind.index_field: segment.part_index,
             "delta": text}
    if kind is OUTPUT_TEXT:
        event["logprobs"] = logprobs or []
        if logprobs:
            segment.logprobs.extend(logprobs)
    events.append(event)


def close_part(events: list, segment: TextSegment) -> None:
    """Close the open part with the text streamed into it: its `*.done` and `*part.done`."""
    kind, part = segment.kind, segment.part
    text = "".join(segment.pieces)
    part[kind.text_field] = text
    done = {"type": kind.done_event, "item_id": segment.item["id"],
            "output_index": segment.output_index, kind.index_field: segment.part_index,
            kind.text_field: text}
    if kind is OUTPUT_TEXT:
        part["logprobs"] = segment.logprobs
        done["logprobs"] = segment.logprobs
        if segment.annotate is not None:
            _annotate(events, segment, part, text)
    events.append(done)
    events.append({"type": kind.part_done, "item_id": segment.item["id"],
                   "output_index": segment.output_index,
                   kind.index_field: segment.part_index, "part": part})
    segment.kind = segment.part = None


def _annotate(events: list, segment: TextSegment, part: dict, text: str) -> None:
    """The part's citations: one `output_text.annotation.added` each, before its `.done`."""
    for annotation in segment.annotate(text):
        events.append({"type": "response.output_text.annotation.added",
                       "item_id": segment.item["id"], "output_index": segment.output_index,
                       "content_index": segment.part_index,
                       "annotation_index": len(part["annotations"]),
                       "annotation": annotation})
        part["annotations"] = [*part["annotations"], annotation]  # the added event keeps []


def close_item(events: list, segment: TextSegment, status: str, seal_reasoning) -> None:
    """Close the segment's item (and its open part) with `status`: its `output_item.done`.

    A reasoning item is sealed into `encrypted_content` when `seal_reasoning` is given."""
    if segment.kind is not None:
        close_part(events, segment)
    segment.item["status"] = status
    if segment.item["type"] == "reasoning" and seal_reasoning is not None:
        segment.item["encrypted_content"] = seal_reasoning(segment.item)
    events.append({"type": "response.output_item.done", "output_index": segment.output_index,
                   "item": segment.item})
