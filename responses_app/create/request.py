"""Validation of a `POST /v1/responses` body into a CreateRequest (no database here).

The fields, their types, limits and defaults are described once, in responses_app.create.body
(which the OpenAPI document is derived from too); input items are normalized to the stored
shapes by responses_app.create.input_items. Here: the request object, and the rules that tie two
fields together. Anything the gateway cannot honour is a clear 400.
"""
from dataclasses import dataclass, field

from hosted_tools.request_spec import check_tool_choice

from .body import parse_fields
from .params import parse_metadata
from ..errors import InvalidRequest
from .input_items import normalize_input

__all__ = ["CreateRequest", "parse_create_request", "normalize_input", "parse_metadata"]

# The fields that make up CreateRequest.params, in the order the response echoes them.
PARAM_FIELDS = (
    "tools", "tool_choice", "parallel_tool_calls", "temperature", "top_p", "presence_penalty",
    "frequency_penalty", "top_logprobs", "max_output_tokens", "max_tool_calls", "text",
    "reasoning", "truncation", "metadata", "user", "safety_identifier", "prompt_cache_key",
    "service_tier",
)


@dataclass
class CreateRequest:
    model: str
    input_items: list[dict]
    instructions: str | None
    stream: bool
    store: bool
    background: bool
    previous_response_id: str | None
    include: list[str]
    # What the response object echoes and the upstream request is built from.
    params: dict = field(default_factory=dict)
    conversation_id: str | None = None
    # MCP `headers` by server_label: for this run only, never stored.
    mcp_headers: dict = field(default_factory=dict)
    # The types of the hosted tools dropped (hosted_tools.catalog): a header names them.
    dropped_tools: list[str] = field(default_factory=list)
    # Where the web search tool kept is in the body (`tools[i]`): it runs only if a backend
    # serves the tenant (hosted_tools.tenant_tools settles that once the tenant is known).
    web_search_param: str | None = None
    # The items `previous_response_id` stands for, when the front door has them (a
    # WebSocket's last response, kept in memory): then nothing is read from the database.
    history: list[dict] | None = None


def parse_create_request(body) -> CreateRequest:
    if not isinstance(body, dict):
        raise InvalidRequest("The request body must be a JSON object.")
    values = parse_fields(body)
    _check_combinations(values)
    tools, mcp_headers, dropped_tools, web_search_param = values["tools"]
    check_tool_choice(values["tool_choice"], tools)
    params = {name: values[name] for name in PARAM_FIELDS}
    params["tools"] = tools
    if values["context_management"]:  # server-side compaction (responses_app/context)
        params["context_management"] = values["context_management"]
    if values["prompt"]:  # filled in by prompts.services, which echoes it
        params["prompt"] = values["prompt"]
    if values["prompt_cache_retention"]:  # passed on to the backends that take it
        params["prompt_cache_retention"] = values["prompt_cache_retention"]
    if params["service_tier"] == "auto":
        params["service_tier"] = "default"
    return CreateRequest(
        model=values["model"],
        input_items=values["input"],
        instructions=values["instructions"],
        stream=values["stream"],
        store=values["store"],
        background=values["background"],
        previous_response_id=values["previous_response_id"],
        include=values["include"],
        params=params,
        conversation_id=values["conversation"],
        mcp_headers=mcp_headers,
        dropped_tools=dropped_tools,
        web_search_param=web_search_param,
    )


def _check_combinations(values: dict) -> None:
    triggers = [i for i, item in enumerate(values["input"])
                if item["type"] == "compaction_trigger"]
    if triggers and triggers != [len(values["input"]) - 1]:
        raise InvalidRequest("A compaction_trigger item must be the last input item (and "
                             "there is at most one).", param=f"input[{triggers[0]}]",
                             code="invalid_value")
    if values["background"] and not values["store"]:
        raise InvalidRequest("Background responses must be stored: background=true needs "
                             "store=true.", param="background", code="invalid_value")
    if values["conversation"] is not None and values["previous_response_id"] is not None:
        raise InvalidRequest("Mutually exclusive parameters: Ensure you are only providing one "
                             "of: 'previous_response_id' or 'conversation'.",
                             code="mutually_exclusive_parameters")


