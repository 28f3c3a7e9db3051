"""The response object (Open Responses' ResponseResource, every field present)."""

SAMPLING_DEFAULTS = {
    "temperature": 1.0,
    "top_p": 1.0,
    "presence_penalty": 0.0,
    "frequency_penalty": 0.0,
    "top_logprobs": 0,
}


def new_response_resource(*, response_id: str, created_at: int, model: str, params: dict,
                          instructions: str | None, previous_response_id: str | None,
                          store: bool, background: bool, status: str,
                          conversation_id: str | None = None) -> dict:
    sampling = {name: params[name] if params.get(name) is not None else default
                for name, default in SAMPLING_DEFAULTS.items()}
    resource = {
        "id": response_id,
        "object": "response",
        "created_at": created_at,
        "completed_at": None,
        "status": status,
        "incomplete_details": None,
        "model": model,
        "previous_response_id": previous_response_id,
        "instructions": instructions,
        "output": [],
        "error": None,
        "tools": params["tools"],
        "tool_choice": params["tool_choice"],
        "truncation": params["truncation"],
        "parallel_tool_calls": params["parallel_tool_calls"],
        "text": params["text"],
        **sampling,
        "reasoning": params["reasoning"],
        "usage": None,
        "max_output_tokens": params["max_output_tokens"],
        "max_tool_calls": params["max_tool_calls"],
        "store": store,
        "background": background,
        "service_tier": params["service_tier"],
        "metadata": params["metadata"],
        "safety_identifier": params["safety_identifier"],
        "prompt_cache_key": params["prompt_cache_key"],
        "user": params["user"],
        "conversation": {"id": conversation_id} if conversation_id else None,
    }
    if params.get("prompt"):  # a stored prompt was used (prompts.services)
        resource["prompt"] = params["prompt"]
    return resource
