"""Chat Completions stream chunks → Responses API stream events: one pure state machine.

This module owns the machine: which output item is open (a text segment, tool calls, MCP
calls awaiting results), the transitions between them, and the response's own lifecycle.
Which item a tool call becomes is `call_kinds`; the items and their events are built in
`text_items` (message and reasoning), `tool_items` (function calls, MCP approval requests),
`custom_tools`, `client_tool_calls` (shell, local shell, apply_patch) and `mcp_events`
(MCP calls and tool lists); the content part kinds are in `part_kinds`.

`start()` opens the response, `feed(chunk, events)` adds one chunk's events to `events` (a
chunk off shape raises: chunk_shape), `finish()` closes what is open and ends the response
(`finish("steered")`: incomplete, as a WebSocket steer stops it), `fail()` ends it as
failed, `cancel()` closes what is open and leaves the response cancelled (no terminal
event exists for that: the stream just ends).
Before a steered, cancelled or failed end the run calls `close_cut_turn()` and gives the
usage it counted of a turn cut before the upstream reported one (`count_cut_turn`). The
usage of every end is the sum of the run's upstream calls (`call_usages`). Events come
back as dicts without sequence numbers (the EventStamper numbers them, in one place). The
response object is kept current, so the terminal event carries the full response.

A response may span several upstream turns (gateway-run MCP and hosted tools): `end_turn()`
closes the turn's items and hands back the calls to run, the steps of `gateway_tool_steps`
(inherited) close each with its result, and the next turn's chunks are fed to the same
translator, so output indexes and items continue. A call to an MCP tool becomes an
`mcp_call` item (or, when it needs approval, an `mcp_approval_request` item); a call to a
hosted tool a `web_search_call` or `file_search_call` item (`hosted_items`), whose results
are numbered for the model to cite and found again in the answer's text as annotations
(`citations`).

Contract: the events a call returns must be serialized before the next call, because the
item dicts they point at keep changing until their `output_item.done`.
"""
from . import call_kinds, mcp_events, text_items, tool_items
from .call_usages import CallUsages
from .chunk_shape import taken
from .citations import annotations_for
from .client_tool_calls import ADDED_WHEN_DONE, CLIENT_TOOL_ITEMS, close_client_tool_call
from .gateway_tool_steps import HOSTED_ITEM_TYPES, GatewayToolSteps
from .part_kinds import OUTPUT_TEXT, REASONING_SUMMARY, REASONING_TEXT, REFUSAL
from .text_items import TextSegment
from .tool_items import McpToolTarget, ToolCall
from .translator_options import TranslatorOptions

__all__ = ["McpToolTarget", "ResponseTranslator", "TranslatorOptions"]

FINISH_INCOMPLETE = {"length": "max_output_tokens", "content_filter": "content_filter"}


class ResponseTranslator(GatewayToolSteps):
    def __init__(self, response: dict, options: TranslatorOptions):
        self.response = response
        self.options = options
        self._segment: TextSegment | None = None
        self._calls: dict[int, ToolCall] = {}
        self._finish_reason: str | None = None
        self._usages = CallUsages()
        # mcp_call and hosted call items whose arguments are done and whose result is awaited
        self._running: dict[str, ToolCall] = {}
        # hosted tool results by the number the model cites them by
        self.citation_sources: dict[int, object] = {}

    # --- lifecycle ---------------------------------------------------------------------------
    def start(self) -> list[dict]:
        self.response["status"] = "in_progress"
        return [
            {"type": "response.created", "response": self.response},
            {"type": "response.in_progress", "response": self.response},
        ]

    def feed(self, chunk: dict, events: list | None = None) -> list[dict]:
        events = [] if events is None else events  # a run's, kept if a later piece raises
        if chunk.get("usage"):
            self._usages.reported(chunk["usage"])
        for choice in chunk.get("choices") or ():
            index = choice.get("index")
            if index:  # another choice's (n > 1: the first is read), or off shape
                taken(index, int)
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
                self._finish_reason = taken(choice["finish_reason"], str)
        return events

    def end_turn(self) -> tuple[list[dict], list[dict]]:
        """Close the upstream turn: its items are done, its MCP calls wait for results.

        Returns (events, mcp_call items to run, in output order).
        """
        events: list[dict] = []
        if self._segment is not None:
            self._close_segment(events, "completed")
        to_run = []
        for _, call in sorted(self._calls.items()):
            kind = call.item["type"]
            if kind in tool_items.CLIENT_CALLS:
                tool_items.close_client_call(events, call, "completed")
            elif kind in CLIENT_TOOL_ITEMS:
                if call.output_index is None:  # added with its complete arguments
                    call.output_index = self._add_item_index(call.item)
                close_client_tool_call(events, call, "completed")
                if call.item.get("execution") == "server":  # the gateway's tool search
                    to_run.append(call.item)
            elif kind == "mcp_approval_request":
                call.item["arguments"] = "".join(call.pieces)
                events += mcp_events.added_and_done(self._add_item_index(call.item), call.item)
            elif kind in HOSTED_ITEM_TYPES:
                self._running[call.item["id"]] = call
                to_run.append(call.item)
            else:
                call.item["arguments"] = "".join(call.pieces)
                events.append(mcp_events.arguments_done(call.item, call.output_index))
                self._running[call.item["id"]] = call
                to_run.append(call.item)
        self._calls = {}
        self._finish_reason = None
        self._usages.turn_ended()
        return events, to_run

    @property
    def streams_client_call(self) -> bool:
        """Whether a call the client must answer is streaming (the turn ends with it)."""
        return any(call.item["type"] in tool_items.CLIENT_CALLS + CLIENT_TOOL_ITEMS
                   for call in self._calls.values())

    def finish(self, incomplete: str | None = None) -> list[dict]:
        """The response's end: `incomplete` names why it stops early, if it does."""
        reason = incomplete or FINISH_INCOMPLETE.get(self._finish_reason or "")
        events = self._close_all("incomplete" if reason else "completed")
        self.response["usage"] = self._usages.total()
        self.response["completed_at"] = int(self.options.now())
        if reason:
            self.response["status"] = "incomplete"
            self.response["incomplete_details"] = {"reason": reason}
            events.append({"type": "response.incomplete", "response": self.response})
        else:
            self.response["status"] = "completed"
            events.append({"type": "response.completed", "response": self.response})
        return events

    def close_cut_turn(self) -> tuple[list[dict], bool]:
        """A run cut short, before its `finish`: what is open closed as incomplete (its
        items then hold all they streamed), and whether its turn reported no usage."""
        return self._close_all("incomplete"), self._usages.current_missing

    def count_cut_turn(self, chat_usage: dict) -> None:
        """The usage the run counted of a turn cut before it reported one."""
        self._usages.reported(chat_usage)

    def fail(self, code: str, message: str) -> list[dict]:
        events = self._close_all("incomplete")
        self.response["usage"] = self._usages.total()
        self.response["status"] = "failed"
        self.response["error"] = {"code": code, "message": message}
        events.append({"type": "response.failed", "response": self.response})
        return events

    def cancel(self) -> list[dict]:
        events = self._close_all("incomplete")
        self.response["usage"] = self._usages.total()
        self.response["status"] = "cancelled"
        return events

    # --- text-like items: message (output_text, refusal) and reasoning -------------------
    def _text_piece(self, events, item_type, kind, text, logprobs):
        if text.__class__ is not str:  # else kept, and only its item's close would fail
            raise TypeError("a delta's text is not a string")
        segment = self._segment
        if segment is None or segment.item["type"] != item_type:
            if segment is not None:
                self._close_segment(events, "completed")
            segment = self._open_segment(events, item_type)
        if segment.kind is not kind:
            if segment.kind is not None:
                text_items.close_part(events, segment)
            text_items.open_part(events, segment, kind)
        text_items.text_delta(events, segment, text, logprobs)

    def _open_segment(self, events, item_type) -> TextSegment:
        item, added = text_items.new_item(item_type, self.options.ids)
        segment = TextSegment(item=item, output_index=self._add_item(events, item, added))
        if item_type == "message" and self.options.hosted_tools:
            segment.annotate = self._annotate
        self._segment = segment
        return segment

    def _close_segment(self, events, status, phase="final_answer"):
        if self.options.phase and self._segment.item["type"] == "message":
            self._segment.item["phase"] = phase
        text_items.close_item(events, self._segment, status, self.options.seal_reasoning)
        self._segment = None

    # --- tool calls: function calls, MCP calls and approval requests ---------------------------
    def _tool_call_piece(self, events, position, piece):
        index = piece.get("index", position)
        function = piece.get("function") or {}
        arguments = function.get("arguments")
        if arguments and arguments.__class__ is not str:  # as a text (_text_piece)
            raise TypeError("a tool call's arguments are not a string")
        call = self._calls.get(index)
        if call is None and index.__class__ is not int:  # null: its position; else off shape
            index = position if index is None else taken(index, int)
            call = self._calls.get(index)
        if call is None:
            upstream_name = taken(function.get("name") or "", str)
            taken(piece.get("id") or "", str)
            if self._segment is not None:  # items stream one after another: close the text
                self._close_segment(events, "completed", phase="commentary")
            call = self._open_call(events, piece, upstream_name)
            self._calls[index] = call
        if arguments:
            call.pieces.append(arguments)
            kind = call.item["type"]
            if kind in tool_items.CLIENT_CALLS:
                events += tool_items.client_call_delta(call, arguments)
            elif kind == "mcp_call":
                events.append(mcp_events.arguments_delta(call.item, call.output_index, arguments))
            # a hosted call's arguments stream no events: its query shows when it searches

    def _open_call(self, events, piece, upstream_name) -> ToolCall:
        item, snapshot = call_kinds.call_item(self.options, piece, upstream_name)
        if snapshot is None:  # added to the output when it is done
            return ToolCall(item=item, output_index=None)
        call = ToolCall(item=item, output_index=self._add_item(events, item, snapshot))
        events += call_kinds.opening_events(call)
        return call

    def _annotate(self, text: str) -> list[dict]:
        return annotations_for(text, self.citation_sources)

    # --- shared --------------------------------------------------------------------------------
    def _add_item(self, events, item, added_snapshot) -> int:
        output_index = self._add_item_index(item)
        events.append({"type": "response.output_item.added", "output_index": output_index,
                       "item": added_snapshot})
        return output_index

    def _add_item_index(self, item) -> int:
        output = self.response["output"]
        output.append(item)
        return len(output) - 1

    def _close_all(self, status) -> list[dict]:
        events: list[dict] = []
        open_items = [(call.output_index, call) for call in self._calls.values()
                      if call.output_index is not None]  # approval requests never opened
        open_items += [(call.output_index, call) for call in self._running.values()]
        if self._segment is not None:
            open_items.append((self._segment.output_index, self._segment))
        for _, thing in sorted(open_items, key=lambda pair: pair[0]):
            if not isinstance(thing, ToolCall):
                self._close_segment(events, status)
            elif thing.item["type"] in tool_items.CLIENT_CALLS:
                tool_items.close_client_call(events, thing, status)
            elif thing.item["type"] in CLIENT_TOOL_ITEMS:
                close_client_tool_call(events, thing, status)
            elif thing.item["type"] in HOSTED_ITEM_TYPES:
                events.append(mcp_events.call_unfinished(thing.item, thing.output_index, status))
            else:
                if thing.item["id"] not in self._running:  # arguments still streaming
                    thing.item["arguments"] = "".join(thing.pieces)
                    events.append(mcp_events.arguments_done(thing.item, thing.output_index))
                events.append(mcp_events.call_unfinished(thing.item, thing.output_index, status))
        for _, call in sorted(self._calls.items()):  # patches: added once complete, or never
            if call.output_index is None and call.item["type"] in ADDED_WHEN_DONE \
                    and status == "completed":
                call.output_index = self._add_item_index(call.item)
                close_client_tool_call(events, call, status)
        self._calls = {}
        self._running = {}
        return events
