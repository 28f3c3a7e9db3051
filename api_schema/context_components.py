"""The OpenAPI components of the context endpoints (`POST /v1/responses/input_tokens` and
`POST /v1/responses/compact`): their bodies are parts of the create body (the same
validator reads them), their answers OpenAI's shapes."""
from responses_app.create.body import create_body_schema
from responses_app.create.fields import ref

_CREATE = create_body_schema()
COMPACT_FIELDS = ("model", "input", "instructions", "previous_response_id", "prompt_cache_key")


def _subset(description: str, required: list[str], names) -> dict:
    return {"type": "object", "description": description, "required": required,
            "additionalProperties": False,
            "properties": {name: _CREATE["properties"][name] for name in names}}


INPUT_TOKENS_REQUEST = {
    **_CREATE, "required": ["model"],
    "description": "The body of a create (`input` optional); the count is made on the chat "
                   "request its run would send upstream. The `X-Token-Count-Method` header "
                   "says how: `vllm`, `llamacpp`, `tokenizer` or `estimate`."}
INPUT_TOKENS = {
    "type": "object", "required": ["object", "input_tokens"],
    "properties": {"object": {"const": "response.input_tokens"},
                   "input_tokens": {"type": "integer", "minimum": 0}},
}
COMPACT_REQUEST = _subset("`model`, and `input`, `previous_response_id` or both.", ["model"],
                          COMPACT_FIELDS)
COMPACTED_RESPONSE = {
    "type": "object", "required": ["id", "object", "created_at", "output", "usage"],
    "description": "The user messages kept, then one compaction item (`id`, `type: "
                   "compaction`, `encrypted_content`); send them back as input (with or "
                   "without `previous_response_id`).",
    "properties": {
        "id": {"type": "string"}, "object": {"const": "response.compaction"},
        "created_at": {"type": "integer"},
        "output": {"type": "array", "items": ref("Item")},
        "usage": ref("Usage"),
    },
}
CONTEXT_COMPONENTS = {
    "InputTokensRequest": INPUT_TOKENS_REQUEST,
    "InputTokens": INPUT_TOKENS,
    "CompactResponseRequest": COMPACT_REQUEST,
    "CompactedResponse": COMPACTED_RESPONSE,
}
