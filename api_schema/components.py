"""The JSON schemas of what the /v1 API reads and writes, as OpenAPI components.

They describe the shapes the code produces (responses_app.translation.resource, the
selectors, errors.error_body) and accepts. What it accepts is derived from the validators' own
descriptions: the create body from responses_app.create_body, input items and metadata (shared
with conversations) from responses_app.input_items and create_params. The schemathesis tests
hold the server to them. Items are described by their common fields (`type`, `id`) and left
open, as the OpenAI SDK's models are.
"""
from responses_app.create_body import create_body_schema
from responses_app.create_fields import ref
from responses_app.create_params import METADATA_SCHEMA
from responses_app.custom_tool_items import CUSTOM_TOOL_SCHEMA
from responses_app.input_items import INPUT_ITEM_SCHEMA

from .context_components import CONTEXT_COMPONENTS
from .store_components import STORE_COMPONENTS


def nullable(schema: dict) -> dict:
    return {"oneOf": [schema, {"type": "null"}]}


STRING = {"type": "string"}
OBJECT = {"type": "object", "additionalProperties": True}
NULLABLE_STRING = {"type": ["string", "null"]}

ERROR = {
    "type": "object",
    "description": "Every error: HTTP status, then this body.",
    "required": ["error"],
    "additionalProperties": False,
    "properties": {"error": {
        "type": "object",
        "required": ["message", "type", "param", "code"],
        "additionalProperties": False,
        "properties": {
            "message": STRING,
            "type": {"type": "string", "examples": ["invalid_request_error", "server_error"]},
            "param": NULLABLE_STRING,
            "code": NULLABLE_STRING,
        },
    }},
}

ITEM = {
    "type": "object",
    "description": "An input or output item (message, function_call, function_call_output, "
                   "reasoning, …), as in the OpenAI Responses API.",
    "required": ["type"],
    "additionalProperties": True,
    "properties": {"type": STRING, "id": STRING},
}

USAGE = {
    "type": "object",
    "required": ["input_tokens", "input_tokens_details", "output_tokens",
                 "output_tokens_details", "total_tokens"],
    "properties": {
        "input_tokens": {"type": "integer"},
        "input_tokens_details": {"type": "object", "required": ["cached_tokens"],
                                 "properties": {"cached_tokens": {"type": "integer"}}},
        "output_tokens": {"type": "integer"},
        "output_tokens_details": {"type": "object", "required": ["reasoning_tokens"],
                                  "properties": {"reasoning_tokens": {"type": "integer"}}},
        "total_tokens": {"type": "integer"},
    },
}

RESPONSE_STATUSES = ["queued", "in_progress", "completed", "incomplete", "failed", "cancelled"]

RESPONSE_PROPERTIES = {
    "id": {"type": "string", "pattern": "^resp_"},
    "object": {"const": "response"},
    "created_at": {"type": "integer"},
    "completed_at": {"type": ["integer", "null"]},
    "status": {"enum": RESPONSE_STATUSES},
    "incomplete_details": nullable({"type": "object", "required": ["reason"],
                                    "properties": {"reason": STRING}}),
    "model": STRING,
    "previous_response_id": NULLABLE_STRING,
    "instructions": NULLABLE_STRING,
    "output": {"type": "array", "items": ref("Item")},
    "error": nullable({"type": "object", "required": ["code", "message"],
                       "properties": {"code": STRING, "message": STRING}}),
    "tools": {"type": "array", "items": OBJECT},
    "tool_choice": {"oneOf": [{"enum": ["auto", "none", "required"]}, OBJECT]},
    "truncation": {"enum": ["auto", "disabled"]},
    "parallel_tool_calls": {"type": "boolean"},
    "text": OBJECT,
    "temperature": {"type": "number"},
    "top_p": {"type": "number"},
    "presence_penalty": {"type": "number"},
    "frequency_penalty": {"type": "number"},
    "top_logprobs": {"type": "integer"},
    "reasoning": nullable(OBJECT),
    "usage": nullable(ref("Usage")),
    "max_output_tokens": {"type": ["integer", "null"]},
    "max_tool_calls": {"type": ["integer", "null"]},
    "store": {"type": "boolean"},
    "background": {"type": "boolean"},
    "service_tier": STRING,
    "metadata": {"type": "object", "additionalProperties": STRING},
    "safety_identifier": NULLABLE_STRING,
    "prompt_cache_key": NULLABLE_STRING,
    "user": NULLABLE_STRING,
}

RESPONSE = {
    "type": "object",
    "description": "The response object: every field is present, nullable ones as null.",
    "required": list(RESPONSE_PROPERTIES),
    "additionalProperties": True,
    "properties": RESPONSE_PROPERTIES,
}

CREATE_RESPONSE = create_body_schema()

STREAM_EVENT = {
    "type": "object",
    "description": "A Responses stream event (`response.created`, `response.output_text.delta`, "
                   "…, one terminal `response.completed|incomplete|failed`), numbered from 0.",
    "required": ["type", "sequence_number"],
    "additionalProperties": True,
    "properties": {
        "type": {"type": "string", "pattern": "^response\\."},
        "sequence_number": {"type": "integer", "minimum": 0},
        "response": ref("Response"),
        "item": ref("Item"),
    },
}

SSE_EVENT = {
    "type": "object",
    "description": "One server-sent event: `event: <type>` and `data: <the event as JSON>`; "
                   "the stream ends with `data: [DONE]` (no event name).",
    "required": ["data"],
    "properties": {
        "event": STRING,
        "data": {"anyOf": [
            {"const": "[DONE]"},
            {"type": "string", "contentMediaType": "application/json",
             "contentSchema": ref("ResponseStreamEvent")},
        ]},
    },
}

DELETED_RESPONSE = {
    "type": "object",
    "required": ["id", "object", "deleted"],
    "properties": {"id": STRING, "object": {"const": "response"}, "deleted": {"const": True}},
}

ITEM_LIST = {
    "type": "object",
    "required": ["object", "data", "first_id", "last_id", "has_more"],
    "properties": {
        "object": {"const": "list"},
        "data": {"type": "array", "items": ref("Item")},
        "first_id": NULLABLE_STRING,
        "last_id": NULLABLE_STRING,
        "has_more": {"type": "boolean"},
    },
}

CONVERSATION = {
    "type": "object",
    "required": ["id", "object", "created_at", "metadata"],
    "properties": {
        "id": {"type": "string", "pattern": "^conv_"},
        "object": {"const": "conversation"},
        "created_at": {"type": "integer"},
        "metadata": {"type": "object", "additionalProperties": STRING},
    },
}

CONVERSATION_DELETED = {
    "type": "object",
    "required": ["id", "object", "deleted"],
    "properties": {"id": STRING, "object": {"const": "conversation.deleted"},
                   "deleted": {"const": True}},
}

CREATE_CONVERSATION = {
    "type": "object",
    "properties": {
        "items": {"type": ["array", "null"], "maxItems": 20, "items": ref("InputItem")},
        "metadata": nullable(ref("Metadata")),
    },
}

UPDATE_CONVERSATION = {
    "type": "object",
    "required": ["metadata"],
    "properties": {"metadata": nullable(ref("Metadata"))},
}

ADD_CONVERSATION_ITEMS = {
    "type": "object",
    "required": ["items"],
    "properties": {"items": {"type": "array", "minItems": 1, "maxItems": 20,
                             "items": ref("InputItem")}},
}

MODEL_LIST = {
    "type": "object",
    "required": ["object", "data"],
    "properties": {
        "object": {"const": "list"},
        "data": {"type": "array", "items": {
            "type": "object", "required": ["id", "object", "created", "owned_by"],
            "properties": {"id": STRING, "object": {"const": "model"},
                           "created": {"type": "integer"}, "owned_by": STRING}}},
    },
}

USAGE_RESULT = {
    "type": "object",
    "required": ["object", "model", "num_model_requests", "input_tokens",
                 "input_cached_tokens", "output_tokens", "output_reasoning_tokens"],
    "properties": {
        "object": {"const": "organization.usage.completions.result"},
        "model": STRING,
        "num_model_requests": {"type": "integer"},
        "input_tokens": {"type": "integer"},
        "input_cached_tokens": {"type": "integer"},
        "output_tokens": {"type": "integer"},
        "output_reasoning_tokens": {"type": "integer"},
    },
}
USAGE_PAGE = {
    "type": "object",
    "description": "Daily buckets, one result per model (the shape of OpenAI's organization "
                   "usage API).",
    "required": ["object", "data", "has_more", "next_page"],
    "properties": {
        "object": {"const": "page"},
        "data": {"type": "array", "items": {
            "type": "object", "required": ["object", "start_time", "end_time", "results"],
            "properties": {"object": {"const": "bucket"}, "start_time": {"type": "integer"},
                           "end_time": {"type": "integer"},
                           "results": {"type": "array", "items": USAGE_RESULT}}}},
        "has_more": {"type": "boolean"},
        "next_page": NULLABLE_STRING,
    },
}

COMPONENTS = {
    "Error": ERROR,
    "Metadata": METADATA_SCHEMA,
    "Item": ITEM,
    "InputItem": INPUT_ITEM_SCHEMA,
    "CustomTool": CUSTOM_TOOL_SCHEMA,
    "Usage": USAGE,
    "Response": RESPONSE,
    "CreateResponseRequest": CREATE_RESPONSE,
    "ResponseStreamEvent": STREAM_EVENT,
    "ServerSentEvent": SSE_EVENT,
    "DeletedResponse": DELETED_RESPONSE,
    "ItemList": ITEM_LIST,
    "ModelList": MODEL_LIST,
    "UsagePage": USAGE_PAGE,
    "Conversation": CONVERSATION,
    "ConversationDeleted": CONVERSATION_DELETED,
    "CreateConversationRequest": CREATE_CONVERSATION,
    "UpdateConversationRequest": UPDATE_CONVERSATION,
    "AddConversationItemsRequest": ADD_CONVERSATION_ITEMS,
    **CONTEXT_COMPONENTS,
    **STORE_COMPONENTS,
}
