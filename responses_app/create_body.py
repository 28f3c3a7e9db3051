"""The fields of a `POST /v1/responses` body: the one description of the create body.

`CREATE_BODY` lists every field the gateway reads, in the order they are validated, with its
kind (type and limits), default and whether it is required. `parse_fields()` validates a body
against it and `create_body_schema()` derives the OpenAPI component `CreateResponseRequest`
from it, so the document and the validator cannot drift apart. Rules that tie two fields
together are responses_app.create_request's.
"""
from .create_fields import Boolean, Choice, Field, Integer, Number, Refused, String
from .create_params import (
    CONVERSATION, INCLUDE, INPUT, METADATA, MODEL, REASONING, TEXT, TOOL_CHOICE, TOOLS,
)

CREATE_BODY = (
    Field("prompt", Refused("Reusable prompts (`prompt`) are not supported by this gateway.")),
    Field("model", MODEL, required=True,
          description="Routed to an upstream by name or prefix (GET /v1/models)."),
    Field("input", INPUT, required=True),
    Field("stream", Boolean(), default=False),
    Field("store", Boolean(), default=True),
    Field("background", Boolean(), default=False,
          description="Needs `store: true`."),
    Field("include", INCLUDE, default=[]),
    Field("conversation", CONVERSATION,
          description="A conversation id or {'id': ...}; excludes `previous_response_id`."),
    Field("tools", TOOLS, default=([], {})),
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
    Field("text", TEXT, default={"format": {"type": "text"}}),
    Field("reasoning", REASONING),
    Field("truncation", Choice(("auto", "disabled")), default="disabled"),
    Field("metadata", METADATA, default={}),
    Field("user", String()),
    Field("safety_identifier", String()),
    Field("prompt_cache_key", String()),
    Field("service_tier", String(), default="default",
          description="`auto` is answered as `default`."),
    Field("instructions", String()),
    Field("previous_response_id", String()),
)
FIELDS = {field.name: field for field in CREATE_BODY}


def parse_fields(body: dict) -> dict:
    """Each field of CREATE_BODY by name, validated and normalized (defaults filled in)."""
    return {field.name: field.parse(body) for field in CREATE_BODY}


def create_body_schema() -> dict:
    """The OpenAPI component of the create body, derived from CREATE_BODY."""
    return {
        "type": "object",
        "description": "POST /v1/responses. Unknown fields are ignored; `prompt` is refused "
                       "with a 400.",
        "required": [field.name for field in CREATE_BODY if field.required],
        "additionalProperties": True,
        "properties": {field.name: field.schema() for field in CREATE_BODY},
    }
