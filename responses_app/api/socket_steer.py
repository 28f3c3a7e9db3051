"""Steering on a WebSocket (`response.steer`, OpenAI's WebSocket mode): user input queued
on a running response, which becomes the input of the response that continues it.

The first steer of a running response stops it (streaming.steer_running): its run closes
the upstream request and ends it `incomplete` with `incomplete_details.reason: "steered"`,
keeping what it streamed (its open items closed `incomplete`); its automatic successor
then continues it (`previous_response_id` = the steered response, its settings inherited,
the steered messages as its input, in the order they came). A response that completed
before the stop took effect is continued the same way. One that stops for client-owned
tool output (function calls: a call the client must answer is never cut, its turn ends
the response) keeps the input queued: `response.steer.pending` says what the client must
supply, and the client's next `response.create` continuing that response on its stream
gets the steered messages put before its own input (after the tool output it leads with:
a Chat Completions backend wants a call's results right after the call). The successor's
`response.created` commits the input; whatever cannot be committed comes back in
`response.steer.failed` with its steering id. Responses bound to a `conversation` or
using automatic compaction (`context_management`) cannot be steered
(`steering_not_supported`, as OpenAI refuses them).

Events, as OpenAI names them: `response.steer.accepted` (the server owns the input),
`response.steer.pending` (after `response.completed`, waiting for tool output) and
`response.steer.failed` (rejected or not committed; the input comes back). They carry their
own `sequence_number`, counted per socket from 0, apart from the responses' events.
"""
from dataclasses import dataclass

import orjson
from django.conf import settings

from ..ids import new_id
from ..translation.client_tools import OUTPUT_TYPES

STEER_KEYS = {"type", "previous_response_id", "input"}
MESSAGE_KEYS = {"type", "role", "content"}
PART_TYPES = {"input_text", "input_image", "input_file"}
# Output items the client must answer before a response can be continued.
CLIENT_OWNED = {"function_call": "function_call_output",
                "custom_tool_call": "custom_tool_call_output", **OUTPUT_TYPES}


@dataclass
class Steer:
    """One accepted submission: its id, the response it steers, its input as sent."""
    id: str
    previous_response_id: str
    input: object

    def items(self) -> list:
        """The submission as input items (a string is one user message)."""
        if isinstance(self.input, str):
            return [{"type": "message", "role": "user", "content": self.input}]
        return list(self.input)


class SteerRefused(Exception):
    """A `response.steer` that is not accepted: its error code and message."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code, self.message = code, message


def check_steer(frame: dict) -> tuple[str, object]:
    """The target id and input of a `response.steer` frame, or SteerRefused(invalid_input)."""
    extra = sorted(set(frame) - STEER_KEYS)
    if extra:
        raise SteerRefused("invalid_input", f"Unknown parameter {extra[0]!r}: response.steer "
                           "accepts only 'type', 'previous_response_id' and 'input'.")
    target = frame.get("previous_response_id")
    if not isinstance(target, str) or not target:
        raise SteerRefused("invalid_input", "'previous_response_id' must be a non-empty string.")
    steered = frame.get("input")
    if isinstance(steered, str):
        if not steered:
            raise SteerRefused("invalid_input", "'input' must not be empty.")
        return target, steered
    if not isinstance(steered, list) or not steered:
        raise SteerRefused("invalid_input", "'input' must be a string or a non-empty array "
                           "of user messages.")
    for index, item in enumerate(steered):
        _check_message(item, index)
    return target, steered


def _check_message(item, index: int) -> None:
    where = f"input[{index}]"
    if (not isinstance(item, dict) or item.get("role") != "user"
            or item.get("type", "message") != "message" or set(item) - MESSAGE_KEYS):
        raise SteerRefused("invalid_input", f"{where}: steering accepts only messages with "
                           "the 'user' role, with only 'type', 'role' and 'content'.")
    content = item.get("content")
    if isinstance(content, str):
        return
    if not isinstance(content, list) or not all(
            isinstance(part, dict) and part.get("type") in PART_TYPES for part in content):
        raise SteerRefused("invalid_input", f"{where}.content must be a string or an array "
                           "of input_text, input_image and input_file parts.")


def unsteerable(frame: dict) -> SteerRefused | None:
    """Why the response a `response.create` frame makes cannot be steered (None: it can)."""
    if frame.get("conversation") is not None:
        return SteerRefused("steering_not_supported", "Responses bound to a conversation "
                            "do not support steering.")
    if frame.get("context_management"):
        return SteerRefused("steering_not_supported", "Responses using automatic "
                            "compaction (context_management) do not support steering.")
    return None


def accept(target: str, steered, queued: int) -> Steer:
    """A new submission for a running response holding `queued` ones already."""
    if queued >= settings.WEBSOCKET_MAX_QUEUED:
        raise SteerRefused("too_many_pending_steers", "Too much steering input is pending "
                           f"for this response (at most {settings.WEBSOCKET_MAX_QUEUED}).")
    return Steer(new_id("steer"), target, steered)


def required_input(resource: dict) -> list:
    """Stubs of the client-owned tool output a response waits for (empty: none)."""
    stubs = []
    for item in resource.get("output") or ():
        kind = CLIENT_OWNED.get(item.get("type"))
        if kind == "function_call_output":
            stubs.append({"type": kind, "call_id": item["call_id"], "name": item["name"]})
        elif kind is not None:
            stubs.append({"type": kind, "call_id": item["call_id"]})
    return stubs


def successor_frame(frame: dict, parent_id: str, steers: list[Steer]) -> dict:
    """The automatic successor of the response `frame` created: the same settings,
    continuing `parent_id`, with the steered messages as its input."""
    body = {key: value for key, value in frame.items()
            if key not in ("input", "previous_response_id", "generate")}
    return {**body, "previous_response_id": parent_id, "input": steered_items(steers)}


def carried_frame(frame: dict, steers: list[Steer]) -> dict:
    """An explicit continuation of a response with pending steers: their messages first,
    after the tool output that answers the response (Chat Completions wants a call's
    results right after it)."""
    own = frame.get("input")
    if isinstance(own, str):
        own = [{"type": "message", "role": "user", "content": own}]
    own = list(own or ())
    answers = 0
    while (answers < len(own) and isinstance(own[answers], dict)
           and str(own[answers].get("type", "")).endswith("_output")):
        answers += 1
    return {**frame, "input": own[:answers] + steered_items(steers) + own[answers:]}


def steered_items(steers: list[Steer]) -> list:
    return [item for steer in steers for item in steer.items()]


class SteerEvents:
    """The steering events of one socket, numbered from 0 (apart from responses')."""

    def __init__(self):
        self.sequence = 0

    def _frame(self, event: dict, stream_id: str | None) -> str:
        event["sequence_number"] = self.sequence
        self.sequence += 1
        if stream_id is not None:
            event["stream_id"] = stream_id
        return orjson.dumps(event).decode()

    def accepted(self, steer: Steer, stream_id: str | None) -> str:
        return self._frame({"type": "response.steer.accepted", "steer": {
            "id": steer.id, "previous_response_id": steer.previous_response_id}}, stream_id)

    def pending(self, steer: Steer, stubs: list, stream_id: str | None) -> str:
        return self._frame({"type": "response.steer.pending", "reason":
                            "waiting_for_required_input", "required_input": stubs, "steer": {
                                "id": steer.id,
                                "previous_response_id": steer.previous_response_id}},
                           stream_id)

    def failed(self, target, steered, steer_id: str | None, code: str, message: str,
               stream_id: str | None = None) -> str:
        steer = {"previous_response_id": target, "input": steered}
        if steer_id is not None:
            steer["id"] = steer_id
        return self._frame({"type": "response.steer.failed", "steer": steer, "error": {
            "type": "invalid_request_error", "code": code, "message": message}}, stream_id)

    def lost(self, steer: Steer, code: str, message: str, stream_id: str | None) -> str:
        """An accepted submission that could not be committed."""
        return self.failed(steer.previous_response_id, steer.input, steer.id, code, message,
                           stream_id)
