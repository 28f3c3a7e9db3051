"""The chat request a response's run sends upstream, from its job: the history it continues
(a chain or a conversation), its own input, compaction items rendered as their summaries.
The run (worker/run_job.py) and the input_tokens count (context/services.py) both build it
here, so a count is made on exactly the request the upstream would receive."""
import asyncio

from django.conf import settings

from conversations.items import conversation_items
from upstreams.routing import default_route, remembered_route_for_model, route_for_model

from ..history import chain_items
from ..translation.chat_request import ChatRequest, build_chat_request
from .compaction_items import upstream_items


def history_items(tenant_id: int, previous_response_id: str | None,
                  conversation_id: str | None) -> list[dict]:
    """The items a response continues (database), oldest first."""
    if previous_response_id:
        return chain_items(tenant_id, previous_response_id, since_compaction=True) or []
    if conversation_id:
        return conversation_items(conversation_id)
    return []


def chat_request_for(model: str, request: dict, items: list[dict]) -> ChatRequest:
    """The chat request for `model` of a job's `request` (instructions, params, include)
    over `items` (its history, then its input)."""
    route = route_of(model)
    return build_chat_request(
        model=model, instructions=request.get("instructions"),
        items=upstream_items(items), params=request["params"],
        include=request["include"], max_tokens_param=settings.UPSTREAM_MAX_TOKENS_PARAM,
        merge_user_messages=settings.UPSTREAM_MERGE_USER_MESSAGES,
        images=route.accepts_images, passthrough=route.passthrough_params,
    )


def route_of(model: str):
    """The model's route, for what its backend takes (images, parameters passed on). On an
    event loop (which must not wait for the database) the route table in memory, which the
    run read moments before; the default route if even that has expired."""
    route = remembered_route_for_model(model)
    if route is None and not _on_event_loop():
        route = route_for_model(model)
    return route or default_route()


def _on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
