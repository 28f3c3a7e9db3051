"""Chat Completions stream chunks → Responses API stream events: one pure state machine.

`start()` opens the response, `feed(chunk)` turns one decoded chunk into events, `finish()`
closes whatever is open and ends the response, `fail()` ends it as failed, `cancel()`
closes what is open and leaves the response cancelled (no terminal event exists for that:
the stream just ends). Events come back
as dicts without sequence numbers (the EventStamper numbers them, in one place). The
response object is kept current, so the terminal event carries the full response.

Contract: the events a call returns must be serialized before the next call, because the
item dicts they point at keep changing until their `output_item.done`.
"""
import time
from dataclasses import dataclass, field

from .usage import usage_from_chat


@dataclass(frozen=True)
class PartKind:
    """A streamed content part: its part type, its text field and its event names."""

    part_type: str
    text_field: str
    delta_event: str
    done_event: str
    part_added: str = "response.content_part.added"
    part_done: str = "response.content_part.done"
    index_field: str = "content_index"
    item_list: str = "content"


OUTPUT_TEXT = PartKind("output_text", "text", "response.output_text.delta",
                       "response.output_text.done")
REFUSAL = PartKind("refusal", "refusal", "response.refusal.delta", "response.refusal.done")
REASONING_TEXT = PartKind("reasoning_text", "text", "response.reasoning_text.delta",
                          "response.reasoning_text.done")
REASONING_SUMMARY = PartKind("summary_text", "text", "response.reasoning_summary_text.delta",
                             "response.reasoning_summary_text.done",
                             part_added="response.reasoning_summary_part.added",
                             part_done="response.reasoning_summary_part.done",
                             index_field="summary_index", item_list="summary")

FINISH_INCOMPLETE = {"length": "max_output_tokens", "content_filter": "content_filter"}


@dataclass
class _Segment:
    """The open message or reasoning item and its open content part."""

    item: dict
    output_index: int
    kind: PartKind | None = None
    part: dict | None = None
    part_index: int = -1
    pieces: list = field(default_factory=list)
    logprobs: list = field(default_factory=list)


@dataclass
class _ToolCall:
    item: dict
    output_index: int
    pieces: list = field(default_factory=list)


@dataclass
class TranslatorOptions:
    ids: "callable"                      # prefix -> new id
    reasoning_as_summary: bool = False   # Codex shows reasoning only as summary events
    include_logprobs: bool = False
    # upstream function name -> (name, namespace) for flattened namespace tools
    function_names: dict = field(default_factory=dict)
    # reasoning item -> opaque token, when the client asked for reasoning.encrypted_content
    seal_reasoning: "callable | None" = None
    now: "callable" = time.time


class ResponseTranslator:
    def __init__(self, response: dict, options: TranslatorOptions):
        self.response = response
        self.options = options
        self._segment: _Segment | None = None
        self._calls: dict[int, _ToolCall] = {}
        self._finish_reason: str | None = None
        self._usage: dict | None = None

    # --- lifecycle ---------------------------------------------------------------------------
    def start(self) -> list[dict]:
        self.response["status"] = "in_progress"
        return [
            {"type": "response.created", "response": self.response},
            {"type": "response.in_progress", "response": self.response},
        ]

    def feed(self, chunk: dict) -> list[dict]:
        events: list[dict] = []
        usage = chunk.get("usage")
        if usage:
            self._usage = usage
        for choice in chunk.get("choices") or ():
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if reasoning:
                kind = REASONING_SUMMARY if self.options.reasoning_as_summary else REASONING_TEXT
                self._text_piece(events, "reasoning", kind, reasoning, None)
            content = delta.get("content")
            if content:
                logprobs = None
                if self.options.include_logprobs:
                    logprobs = (choice.get("logprobs") or {}).get("content") or []
                self._text_piece(events, "message", OUTPUT_TEXT, content, logprobs)
            refusal = delta.get("refusal")
            if refusal:
                self._text_piece(events, "message", REFUSAL, refusal, None)
            for position, call in enumerate(delta.get("tool_calls") or ()):
                self._tool_call_piece(events, position, call)
            if choice.get("finish_reason"):
                self._finish_reason = choice["finish_reason"]
        return events

    def finish(self) -> list[dict]:
        reason = FINISH_INCOMPLETE.get(self._finish_reason or "")
        events = self._close_all("incomplete" if reason else "completed")
        self.response["usage"] = usage_from_chat(self._usage)
        self.response["completed_at"] = int(self.options.now())
        if reason:
            self.response["status"] = "incomplete"
            self.response["incomplete_details"] = {"reason": reason}
            events.append({"type": "response.incomplete", "response": self.response})
        else:
            self.response["status"] = "completed"
            events.append({"type": "response.completed", "response": self.response})
        return events

    def fail(self, code: str, message: str) -> list[dict]:
        events = self._close_all("incomplete")
        self.response["usage"] = usage_from_chat(self._usage)
        self.response["status"] = "failed"
        self.response["error"] = {"code": code, "message": message}
        events.append({"type": "response.failed", "response": self.response})
        return events

    def cancel(self) -> list[dict]:
        events = self._close_all("incomplete")
        self.response["usage"] = usage_from_chat(self._usage)
        self.response["status"] = "cancelled"
        return events

    # --- text-like items: message (output_text, refusal) and reasoning -------------------
    def _text_piece(self, events, item_type, kind, text, logprobs):
        segment = self._segment
        if segment is None or segment.item["type"] != item_type:
            if segment is not None:
                self._close_segment(events, "completed")
            segment = self._open_segment(events, item_type)
        if segment.kind is not kind:
            if segment.kind is not None:
                self._close_part(events, segment)
            self._open_part(events, segment, kind)
        segment.pieces.append(text)
        event = {"type": kind.delta_event, "item_id": segment.item["id"],
                 "output_index": segment.output_index, kind.index_field: segment.part_index,
                 "delta": text}
        if kind is OUTPUT_TEXT:
            event["logprobs"] = logprobs or []
            if logprobs:
                segment.logprobs.extend(logprobs)
        events.append(event)

    def _open_segment(self, events, item_type) -> _Segment:
        if item_type == "message":
            item = {"id": self.options.ids("msg"), "type": "message", "status": "in_progress",
                    "role": "assistant", "content": []}
            added = {**item, "content": []}
        else:
            item = {"id": self.options.ids("rs"), "type": "reasoning", "status": "in_progress",
                    "summary": [], "content": []}
            added = {**item, "summary": [], "content": []}
        segment = _Segment(item=item, output_index=self._add_item(events, item, added))
        self._segment = segment
        return segment

    def _open_part(self, events, segment, kind):
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

    def _close_part(self, events, segment):
        kind, part = segment.kind, segment.part
        text = "".join(segment.pieces)
        part[kind.text_field] = text
        done = {"type": kind.done_event, "item_id": segment.item["id"],
                "output_index": segment.output_index, kind.index_field: segment.part_index,
                kind.text_field: text}
        if kind is OUTPUT_TEXT:
            part["logprobs"] = segment.logprobs
            done["logprobs"] = segment.logprobs
        events.append(done)
        events.append({"type": kind.part_done, "item_id": segment.item["id"],
                       "output_index": segment.output_index,
                       kind.index_field: segment.part_index, "part": part})
        segment.kind = segment.part = None

    def _close_segment(self, events, status):
        segment = self._segment
        if segment.kind is not None:
            self._close_part(events, segment)
        segment.item["status"] = status
        if segment.item["type"] == "reasoning" and self.options.seal_reasoning is not None:
            segment.item["encrypted_content"] = self.options.seal_reasoning(segment.item)
        events.append({"type": "response.output_item.done", "output_index": segment.output_index,
                       "item": segment.item})
        self._segment = None

    # --- function calls ------------------------------------------------------------------------
    def _tool_call_piece(self, events, position, piece):
        index = piece.get("index", position)
        function = piece.get("function") or {}
        call = self._calls.get(index)
        if call is None:
            if self._segment is not None:  # items stream one after another: close the text
                self._close_segment(events, "completed")
            upstream_name = function.get("name") or ""
            name, namespace = self.options.function_names.get(upstream_name, (upstream_name, None))
            item = {"id": self.options.ids("fc"), "type": "function_call",
                    "status": "in_progress", "arguments": "",
                    "call_id": piece.get("id") or self.options.ids("call"), "name": name}
            if namespace:
                item["namespace"] = namespace
            call = _ToolCall(item=item, output_index=self._add_item(events, item, dict(item)))
            self._calls[index] = call
        arguments = function.get("arguments")
        if arguments:
            call.pieces.append(arguments)
            events.append({"type": "response.function_call_arguments.delta",
                           "item_id": call.item["id"], "output_index": call.output_index,
                           "delta": arguments})

    def _close_call(self, events, call, status):
        item = call.item
        item["arguments"] = "".join(call.pieces)
        item["status"] = status
        events.append({"type": "response.function_call_arguments.done", "item_id": item["id"],
                       "output_index": call.output_index, "arguments": item["arguments"],
                       "name": item["name"]})
        events.append({"type": "response.output_item.done", "output_index": call.output_index,
                       "item": item})

    # --- shared --------------------------------------------------------------------------------
    def _add_item(self, events, item, added_snapshot) -> int:
        output = self.response["output"]
        output_index = len(output)
        output.append(item)
        events.append({"type": "response.output_item.added", "output_index": output_index,
                       "item": added_snapshot})
        return output_index

    def _close_all(self, status) -> list[dict]:
        events: list[dict] = []
        open_items = [(call.output_index, call) for call in self._calls.values()]
        if self._segment is not None:
            open_items.append((self._segment.output_index, self._segment))
        for _, thing in sorted(open_items, key=lambda pair: pair[0]):
            if isinstance(thing, _ToolCall):
                self._close_call(events, thing, status)
            else:
                self._close_segment(events, status)
        self._calls = {}
        return events
