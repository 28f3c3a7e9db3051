"""Schema oracles for events and response objects, plus the one-call stream check.

This module owns *schema* conformance, judged by two independent, published models:

* the ``openai`` SDK's pydantic types (``ResponseStreamEvent``, ``Response``). Those models
  accept extra keys and coerce lax types (``"3"`` -> ``3``), so validation alone proves
  little; we also require ``model_dump(mode="json", exclude_unset=True, by_alias=True)`` to
  equal the input exactly (nothing dropped, nothing coerced);
* the ``openresponses_types`` models generated from the Open Responses OpenAPI spec
  (``...StreamingEvent`` classes, ``ResponseResource``), plus "every ``ResponseResource``
  field is present as a key".

Where Open Responses has no model, or names/shapes differ from the OpenAI SDK (which the
gateway follows, see PROTOCOL.md), the difference is declared in the ``OPENRESPONSES_*``
constants below with the reason; anything not declared there is an error.

``check_sse_stream(raw)`` = ``tests.sse.parse_sse`` + ``validate_event`` on every event +
``tests.invariants.check_stream``; it is what stream tests call.
"""

from __future__ import annotations

import copy
import enum
import typing

import openresponses_types as ort
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import BaseModel, TypeAdapter, ValidationError

from tests.invariants import check_stream
from tests.sse import parse_sse, parse_sse_chunks

__all__ = [
    "validate_event",
    "validate_response",
    "check_sse_stream",
    "check_sse_chunks",
    "RESPONSE_RESOURCE_FIELDS",
    "OPENRESPONSES_EVENT_NAMES",
    "OPENRESPONSES_UNVALIDATED_EVENTS",
    "OPENRESPONSES_UNMODELLED_ITEM_TYPES",
]

# Our (OpenAI SDK) event type -> the Open Responses type with the same shape.
OPENRESPONSES_EVENT_NAMES = {
    "response.reasoning_text.delta": "response.reasoning.delta",
    "response.reasoning_text.done": "response.reasoning.done",
}

_NO_HOSTED = "Open Responses (spec 2026-04-24) has no hosted search tools (OpenAI's own)"
_NO_MCP = "Open Responses (spec 2026-04-24) has no MCP events; MCP is an OpenAI hosted-tool extension"
# Event types we may emit that are validated by the openai model only, with the reason.
OPENRESPONSES_UNVALIDATED_EVENTS = {
    "response.compaction.compacting": (
        "Open Responses (spec 2026-04-24) models the compaction item but no event announcing it"),
    "error": (
        "shapes differ: OpenAI's `error` event has code/message/param at top level, Open Responses "
        "nests them in an `error` object; we follow OpenAI (and PROTOCOL uses response.failed instead)"
    ),
    **{f"response.{kind}.{stage}": _NO_HOSTED
       for kind in ("web_search_call", "file_search_call")
       for stage in ("in_progress", "searching", "completed")},
    "response.mcp_list_tools.in_progress": _NO_MCP,
    "response.mcp_list_tools.completed": _NO_MCP,
    "response.mcp_list_tools.failed": _NO_MCP,
    "response.mcp_call.in_progress": _NO_MCP,
    "response.mcp_call.completed": _NO_MCP,
    "response.mcp_call.failed": _NO_MCP,
    "response.mcp_call_arguments.delta": _NO_MCP,
    "response.mcp_call_arguments.done": _NO_MCP,
    "response.custom_tool_call_input.delta": "Open Responses (spec 2026-04-24) has no custom tools",
    "response.custom_tool_call_input.done": "Open Responses (spec 2026-04-24) has no custom tools",
    **{f"response.shell_call_command.{stage}": "Open Responses (spec 2026-04-24) has no shell tool"
       for stage in ("added", "delta", "done")},
}

_NO_MCP_ITEM = "Open Responses output items are message/function_call/function_call_output/reasoning/compaction"
# Output item types Open Responses cannot represent. `output_item.added/.done` events carrying
# them skip the Open Responses check, and they are left out of `output` for the
# ResponseResource check (the openai model still validates them in full).
OPENRESPONSES_UNMODELLED_ITEM_TYPES = {
    "mcp_list_tools": _NO_MCP_ITEM,
    "mcp_call": _NO_MCP_ITEM,
    "mcp_approval_request": _NO_MCP_ITEM,
    "custom_tool_call": _NO_MCP_ITEM,
    "web_search_call": _NO_MCP_ITEM,
    "file_search_call": _NO_MCP_ITEM,
    "shell_call": _NO_MCP_ITEM,
    "local_shell_call": _NO_MCP_ITEM,
    "apply_patch_call": _NO_MCP_ITEM,
    "tool_search_call": _NO_MCP_ITEM,
    "tool_search_output": _NO_MCP_ITEM,
}
# Other ways we adapt a response object before the ResponseResource check, with the reason.
OPENRESPONSES_RESPONSE_ADJUSTMENTS = {
    "tools": "Open Responses' Tool is a function tool only; other tool types (mcp, ...) are left out",
    "text.format.schema": (
        "the generated JsonSchemaResponseFormat types `schema` as None (generator artefact), so a real "
        "JSON schema is replaced by null; name/description/strict are still checked"
    ),
    "tool_choice": (
        "Open Responses' ToolChoice has no hosted tool choice ({'type': 'web_search_preview'}): "
        "such a choice is checked by the openai model only"),
    "file_citation": (
        "Open Responses' annotations are url_citation only: file_citation annotations are left out "
        "of message parts (and annotation.added events carrying one skip its check)"),
}

RESPONSE_RESOURCE_FIELDS = tuple(f.alias or name for name, f in ort.ResponseResource.model_fields.items())


def _openai_event_adapters() -> dict[str, TypeAdapter]:
    """Map event type -> adapter for that one member of ``ResponseStreamEvent``.

    Validating against the member picked by ``type`` (the union's discriminator) keeps the
    error messages about that event instead of listing every member of the union.
    """
    union = ResponseStreamEvent
    if typing.get_origin(union) is typing.Annotated:
        union = typing.get_args(union)[0]
    adapters: dict[str, TypeAdapter] = {}
    for member in typing.get_args(union):
        for value in typing.get_args(member.model_fields["type"].annotation):
            adapters[value] = TypeAdapter(member)
    return adapters


_OPENAI_EVENT_ADAPTERS = _openai_event_adapters()
_OPENAI_RESPONSE = TypeAdapter(Response)
_LIFECYCLE = frozenset(
    {
        "response.created",
        "response.queued",
        "response.in_progress",
        "response.completed",
        "response.incomplete",
        "response.failed",
    }
)


def _openresponses_event_models() -> dict[str, type[BaseModel]]:
    models: dict[str, type[BaseModel]] = {}
    for name in dir(ort):
        cls = getattr(ort, name)
        if not (isinstance(cls, type) and issubclass(cls, BaseModel) and name.endswith("StreamingEvent")):
            continue
        annotation = cls.model_fields["type"].annotation
        if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
            values = [member.value for member in annotation]
        else:
            values = list(typing.get_args(annotation))
        assert len(values) == 1, f"{name}: cannot tell its event type from {annotation!r}"
        models[values[0]] = cls
    return models


OPENRESPONSES_EVENT_MODELS = _openresponses_event_models()


def _first_difference(got, want, path: str = "$") -> str | None:
    if isinstance(got, dict) and isinstance(want, dict):
        for key in sorted(set(got) | set(want), key=str):
            if key not in got:
                return f"{path}.{key}: dropped by the model (input {want[key]!r})"
            if key not in want:
                return f"{path}.{key}: added by the model ({got[key]!r})"
            diff = _first_difference(got[key], want[key], f"{path}.{key}")
            if diff:
                return diff
        return None
    if isinstance(got, list) and isinstance(want, list):
        if len(got) != len(want):
            return f"{path}: length {len(got)} after the model, {len(want)} in input"
        for n, (g, w) in enumerate(zip(got, want)):
            diff = _first_difference(g, w, f"{path}[{n}]")
            if diff:
                return diff
        return None
    # Scalars: equal values, and a bool stays a bool (True == 1 in Python); 1 vs 1.0 is fine.
    if got == want and (type(got) is bool) == (type(want) is bool):
        return None
    return f"{path}: input {want!r} ({type(want).__name__}) became {got!r} ({type(got).__name__})"


def _openai_round_trip(adapter: TypeAdapter, obj: dict, what: str) -> None:
    try:
        model = adapter.validate_python(obj)
    except ValidationError as exc:
        raise AssertionError(f"openai model rejects {what}: {exc}") from None
    dumped = model.model_dump(mode="json", exclude_unset=True, by_alias=True)
    assert dumped.get("type") == obj.get("type"), f"{what}: 'type' did not round-trip ({dumped.get('type')!r})"
    diff = _first_difference(dumped, obj)
    assert diff is None, f"openai model does not round-trip {what}: {diff}"


def _openresponses_response_view(resp: dict) -> dict:
    view = copy.deepcopy(resp)
    if isinstance(view.get("output"), list):
        view["output"] = [
            item
            for item in view["output"]
            if not (isinstance(item, dict) and item.get("type") in OPENRESPONSES_UNMODELLED_ITEM_TYPES)
        ]
    if isinstance(view.get("tools"), list):
        view["tools"] = [t for t in view["tools"] if isinstance(t, dict) and t.get("type") == "function"]
    choice = view.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") not in ("function", "allowed_tools"):
        view["tool_choice"] = "auto"
    for item in view.get("output") or ():
        for part in (item.get("content") or ()) if isinstance(item, dict) else ():
            if isinstance(part, dict) and isinstance(part.get("annotations"), list):
                part["annotations"] = _without_file_citations(part["annotations"])
    fmt = (view.get("text") or {}).get("format") if isinstance(view.get("text"), dict) else None
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema" and "schema" in fmt:
        fmt["schema"] = None
    return view


def _without_file_citations(annotations: list) -> list:
    return [a for a in annotations if not (isinstance(a, dict) and a.get("type") == "file_citation")]


def _openresponses_event_view(event: dict) -> dict | None:
    """The event as Open Responses can model it (None: it cannot, see the adjustments)."""
    if (event.get("annotation") or {}).get("type") == "file_citation":
        return None
    view = copy.deepcopy(event)
    for holder in (view.get("part"), view.get("item")):
        if isinstance(holder, dict):
            if isinstance(holder.get("annotations"), list):
                holder["annotations"] = _without_file_citations(holder["annotations"])
            for part in holder.get("content") or ():
                if isinstance(part, dict) and isinstance(part.get("annotations"), list):
                    part["annotations"] = _without_file_citations(part["annotations"])
    return view


def _openresponses_validate(model: type[BaseModel], obj: dict, what: str) -> None:
    try:
        model.model_validate(obj)
    except ValidationError as exc:
        raise AssertionError(f"openresponses {model.__name__} rejects {what}: {exc}") from None


def validate_response(obj: dict) -> None:
    """Validate a full response object against both oracles; all ResponseResource keys present."""
    assert isinstance(obj, dict), f"response must be a dict, got {type(obj).__name__}"
    _openai_round_trip(_OPENAI_RESPONSE, obj, f"response {obj.get('id')!r}")
    _openresponses_validate(ort.ResponseResource, _openresponses_response_view(obj), f"response {obj.get('id')!r}")
    missing = [key for key in RESPONSE_RESOURCE_FIELDS if key not in obj]
    assert missing == [], f"response {obj.get('id')!r} lacks ResponseResource keys {missing!r}"


def validate_event(event: dict) -> None:
    """Validate one stream event against the openai and Open Responses models."""
    assert isinstance(event, dict) and isinstance(event.get("type"), str), f"not an event: {event!r}"
    etype = event["type"]
    what = f"event {etype!r} (sequence_number={event.get('sequence_number')!r})"
    adapter = _OPENAI_EVENT_ADAPTERS.get(etype)
    assert adapter is not None, f"{what}: not an event type of openai's ResponseStreamEvent"
    _openai_round_trip(adapter, event, what)
    if etype in _LIFECYCLE:
        validate_response(event["response"])

    if etype in OPENRESPONSES_UNVALIDATED_EVENTS:
        return
    their_type = OPENRESPONSES_EVENT_NAMES.get(etype, etype)
    model = OPENRESPONSES_EVENT_MODELS.get(their_type)
    assert model is not None, (
        f"{what}: Open Responses has no model for it and it is not declared in OPENRESPONSES_UNVALIDATED_EVENTS"
    )
    item = event.get("item")
    if isinstance(item, dict) and item.get("type") in OPENRESPONSES_UNMODELLED_ITEM_TYPES:
        return
    view = _openresponses_event_view(event)
    if view is None:
        return
    view["type"] = their_type
    if isinstance(view.get("response"), dict):
        view["response"] = _openresponses_response_view(view["response"])
    _openresponses_validate(model, view, what)


def _check_events(events: list[dict]) -> tuple[list[dict], dict]:
    for event in events:
        validate_event(event)
    return events, check_stream(events)


def check_sse_stream(raw: bytes) -> tuple[list[dict], dict]:
    """Framing + schemas + invariants of a complete SSE body; returns (events, final response)."""
    return _check_events(parse_sse(raw).events)


def check_sse_chunks(chunks: list[bytes], *, one_block_per_chunk: bool = False) -> tuple[list[dict], dict]:
    """Like ``check_sse_stream`` for in-process tests that see each server write as a chunk."""
    return _check_events(parse_sse_chunks(chunks, one_block_per_chunk=one_block_per_chunk).events)
