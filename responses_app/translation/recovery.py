"""Ending a run whose worker died: from the events it published, the events that close
what it left open, and its output as far as it got. Pure: events in, events out.

The watchdog uses this to end a dead run's stream the way a live run would have: every
`output_item.added` gets its `output_item.done` (status `incomplete`), every open content
part its text `.done` and part `.done` with the text streamed so far.
"""
import copy
from dataclasses import dataclass, field

from .part_kinds import OUTPUT_TEXT, REASONING_SUMMARY, REASONING_TEXT, REFUSAL

PART_KINDS = {kind.delta_event: kind for kind in (OUTPUT_TEXT, REFUSAL, REASONING_TEXT,
                                                   REASONING_SUMMARY)}
KIND_OF_PART = {kind.part_type: kind for kind in PART_KINDS.values()}
PART_ADDED = {"response.content_part.added", "response.reasoning_summary_part.added"}
ARGUMENT_DELTAS = {"response.function_call_arguments.delta": "response.function_call_arguments.done",
                   "response.mcp_call_arguments.delta": "response.mcp_call_arguments.done",
                   "response.custom_tool_call_input.delta":
                       "response.custom_tool_call_input.done"}
# the item field (and done event field) an item type streams, when it is not `arguments`
STREAMED_FIELD = {"custom_tool_call": "input"}
# the done event of the items that always get one, even with nothing streamed
ALWAYS_DONE = {"function_call": "response.function_call_arguments.done",
               "custom_tool_call": "response.custom_tool_call_input.done"}


@dataclass
class _OpenItem:
    item: dict
    part_event: dict | None = None      # the `*part.added` event of the open part
    kind: object = None                 # its PartKind
    pieces: list = field(default_factory=list)
    arguments: list = field(default_factory=list)
    arguments_event: str | None = None


def close_dead_run(events: list[dict]) -> tuple[list[dict], list[dict]]:
    """The closing events for a run that published `events`, and its output items."""
    output: dict[int, dict] = {}
    open_items: dict[int, _OpenItem] = {}
    for event in events:
        kind = event["type"]
        index = event.get("output_index")
        if kind == "response.output_item.added":
            item = copy.deepcopy(event["item"])
            output[index] = item
            open_items[index] = _OpenItem(item)
        elif kind == "response.output_item.done":
            output[index] = event["item"]
            open_items.pop(index, None)
        elif index in open_items:
            _follow(open_items[index], event)
    closing = []
    for index in sorted(open_items):
        closing += _close(open_items[index], index)
    return closing, [output[index] for index in sorted(output)]


def _follow(state: _OpenItem, event: dict) -> None:
    kind = event["type"]
    if kind in PART_ADDED:
        state.part_event, state.kind, state.pieces = event, _kind_of_part(event["part"]), []
    elif kind in PART_KINDS and state.part_event is not None:
        state.pieces.append(event["delta"])
    elif kind in ARGUMENT_DELTAS:
        state.arguments.append(event["delta"])
        state.arguments_event = ARGUMENT_DELTAS[kind]
    elif state.kind is not None and kind == state.kind.part_done:
        state.item.setdefault(state.kind.item_list, []).append(event["part"])
        state.part_event = state.kind = None


def _close(state: _OpenItem, index: int) -> list[dict]:
    item, events = state.item, []
    if state.part_event is not None:
        added, kind = state.part_event, state.kind
        text = "".join(state.pieces)
        part = {**added["part"], kind.text_field: text}
        position = {kind.index_field: added[kind.index_field]}
        events.append({"type": kind.done_event, "item_id": item["id"], "output_index": index,
                       **position, kind.text_field: text,
                       **({"logprobs": []} if kind is OUTPUT_TEXT else {})})
        events.append({"type": kind.part_done, "item_id": item["id"], "output_index": index,
                       **position, "part": part})
        item.setdefault(kind.item_list, []).append(part)
    if state.arguments_event is not None or item.get("type") in ALWAYS_DONE:
        key = STREAMED_FIELD.get(item.get("type"), "arguments")
        item[key] = "".join(state.arguments)
        done = {"type": state.arguments_event or ALWAYS_DONE[item["type"]],
                "item_id": item["id"], "output_index": index, key: item[key]}
        if item.get("type") == "function_call":
            done["name"] = item.get("name")
        events.append(done)
    item["status"] = "incomplete"
    events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    return events


def _kind_of_part(part: dict):
    return KIND_OF_PART[part["type"]]
