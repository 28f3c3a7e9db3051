"""The fields of a `POST /v1/responses` body: the one description of the create body.

`CREATE_BODY` lists every parameter of OpenAI's create schema (with the two penalties its
response object carries and Codex's `client_metadata`), in the order they are validated,
with its kind (type and limits), default, whether it is required and whether the gateway
applies it. `parse_fields()` validates a body against it (a parameter not in it is OpenAI's
400 `unknown_parameter`) and `create_body_schema()` derives the OpenAPI component
`CreateResponseRequest` from it, so the document and the validator cannot drift apart.
Rules that tie two fields together are responses_app.create.request's.
"""
from prompts.request_spec import SCHEMA as PROMPT_SCHEMA
from prompts.request_spec import parse_prompt

from .fields import (
    Boolean, Choice, Custom, Field, Integer, Number, Opaque, String,
)
from .params import (
    CONVERSATION, INCLUDE, INPUT, METADATA, MODEL, REASONING, TEXT, TOOL_CHOICE, TOOLS,
)
from .context_management import SCHEMA as CONTEXT_MANAGEMENT_SCHEMA
from .context_management import parse_context_management
from ..errors import InvalidRequest

CONTEXT_MANAGEMENT = Custom(parse_context_management, CONTEXT_MANAGEMENT_SCHEMA)

CREATE_BODY = (
    Field("prompt", Custom(parse_prompt, PROMPT_SCHEMA),
          description="A stored prompt template of the tenant: its version's instructions "
                      "and messages, variables filled, go before the request's."),
    Field("model", MODEL, required=True,
          description="Routed to an upstream by name or prefix (GET /v1/models)."),
    Field("input", INPUT, required=True),
    Field("stream", Boolean(), default=False),
    Field("store", Boolean(), default=True),
    Field("background", Boolean(), default=False,
          description="Needs `store: true`."),
    Field("include", INCLUDE, default=list),
    Field("conversation", CONVERSATION,
          description="A conversation id or {'id': ...}; excludes `previous_response_id`."),
    Field("tools", TOOLS, default=lambda: ([], {}, [], None)),
    Field("tool_choice", TOOL_CHOICE, default="auto"),
    Field("parallel_tool_calls", Boolean(), default=True),
    # None when unset: the upstream keeps its own defaults, the response echoes ours.
    Field("temperature", Number(0, 2)),
    Field("top_p", Number(0, 1)),
    Field("presence_penalty", Number(-2, 2)),
    Field("frequency_penalty", Number(-2, 2)),
    Field("top_logprobs", Integer(0, 20)),
    Field("max_output_tokens", Integer(1)),
    Field("max_tool_calls", Integer(1)),
    Field("text", TEXT, default=lambda: {"format": {"type": "text"}}),
    Field("reasoning", REASONING),
    Field("truncation", Choice(("auto", "disabled")), default="disabled",
          description="`auto`: the oldest items are dropped to fit the route's context window; "
                      "`disabled`: over the window is a 400 `context_length_exceeded`."),
    Field("metadata", METADATA, default=dict),
    Field("user", String()),
    Field("safety_identifier", String()),
    Field("prompt_cache_key", String(),
          description="Echoed; sent to the backends whose route passes it on."),
    Field("service_tier", String(), default="default",
          description="Echoed (`auto` as `default`); sent to the backends whose route "
                      "passes it on."),
    Field("prompt_cache_retention", Choice(("in_memory", "24h")),
          description="Sent to the backends whose route passes it on."),
    Field("context_management", CONTEXT_MANAGEMENT,
          description="Server-side compaction past `compact_threshold` input tokens."),
    Field("instructions", String()),
    Field("previous_response_id", String()),
    # Accepted, checked for their type, and not used.
    Field("prompt_cache_options", Opaque("object"), applied=False),
    Field("stream_options", Opaque("object"), applied=False),
    Field("background_options", Opaque("object"), applied=False),
    Field("moderation", Opaque("object"), applied=False),
    Field("image", Opaque("object"), applied=False),
    Field("access_programs", Opaque("object"), applied=False),
    # Not in the SDK's types, sent by Codex on every request, and taken by OpenAI's API.
    Field("client_metadata", Opaque("object"), applied=False),
)
FIELDS = {field.name: field for field in CREATE_BODY}
NOT_APPLIED = tuple(field.name for field in CREATE_BODY if not field.applied)
# Chat Completions' name for the input: OpenAI answers it with its own sentence.
MOVED = {"messages": "Unsupported parameter: 'messages'. In the Responses API, this parameter "
                     "has moved to 'input'. Try again with the new parameter. See the API "
                     "documentation for more information: "
                     "https://platform.openai.com/docs/api-reference/responses/create."}
_POSITION = {field.name: i for i, field in enumerate(CREATE_BODY)}
_REQUIRED = {field.name for field in CREATE_BODY if field.required}
_SHARED_DEFAULTS = {field.name: field.default for field in CREATE_BODY
                    if not callable(field.default)}
_MADE_DEFAULTS = tuple((field.name, field.default) for field in CREATE_BODY
                       if callable(field.default))


def parse_fields(body: dict) -> dict:
    """Each field of CREATE_BODY by name, validated and normalized (defaults filled in).

    The fields present (and the required ones) are checked in the table's order; the rest
    take their defaults without a look."""
    for name in body:
        if name not in FIELDS:
            raise _unknown(name)
    values = dict(_SHARED_DEFAULTS)
    for name, make in _MADE_DEFAULTS:
        values[name] = make()
    for name in sorted(body.keys() | _REQUIRED, key=_POSITION.__getitem__):
        values[name] = FIELDS[name].parse(body.get(name))
    return values


def _unknown(name) -> InvalidRequest:
    if name in MOVED:
        return InvalidRequest(MOVED[name], code="unsupported_parameter")
    return InvalidRequest(f"Unknown parameter: '{name}'.", param=name, code="unknown_parameter")


def create_body_schema() -> dict:
    """The OpenAPI component of the create body, derived from CREATE_BODY."""
    return {
        "type": "object",
        "description": "POST /v1/responses. A field not listed here is a 400 "
                       "`unknown_parameter`; `prompt` is refused with a 400.",
        "required": [field.name for field in CREATE_BODY if field.required],
        "additionalProperties": False,
        "properties": {field.name: field.schema() for field in CREATE_BODY},
    }
