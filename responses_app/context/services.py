"""The context endpoints' work: `POST /v1/responses/input_tokens` (the input tokens of a
create body, counted on the chat request its run would send) and `POST
/v1/responses/compact` (a conversation compacted: compaction.py, its summary written by
the worker's upstream call on the run loop, worker/summary_call.py). Both read what a
create reads (the chain or conversation, referenced items), scoped to the tenant, and store
nothing."""
import time

from conversations.services import conversation_check_input
from upstreams.routing import route_for_model
from upstreams.token_counting import CountFailed, TokenCount, count_chat_tokens

from ..create.request import CreateRequest, parse_create_request
from ..errors import InvalidRequest, NotFound
from ..ids import new_id
from ..create.item_references import resolve_item_references
from ..models import StoredResponse, Tenant
from ..reasoning_token import unsealed
from ..translation.usage import usage_from_chat
from ..worker.summary_call import summarize
from .compaction import compacted
from .rendering import chat_request_for, history_items
from .summary import SummaryFailed

NO_USAGE = {"prompt_tokens": 0, "completion_tokens": 0}


def response_input_tokens(tenant: Tenant, body) -> TokenCount:
    """The input tokens the upstream would receive for this create body."""
    create = _parsed(body)
    chat = chat_request_for(create.model, _request(create), _items(tenant, create))
    try:
        return count_chat_tokens(route_for_model(create.model), chat.body)
    except CountFailed as exc:
        raise SummaryFailed(f"The input tokens could not be counted: {exc}.") from None


def response_compact(tenant: Tenant, body) -> dict:
    """The compacted conversation, OpenAI's `response.compaction` object."""
    create = _parsed(body)
    if not create.input_items and not create.previous_response_id:
        raise InvalidRequest("Nothing to compact: give 'input', 'previous_response_id' or both.",
                             param="input", code="missing_required_parameter")
    items = _items(tenant, create)
    chat = chat_request_for(create.model, _request(create), items)
    done = compacted(*summarize(route_for_model(create.model), chat.body), items)
    return {"id": new_id("resp"), "object": "response.compaction",
            "created_at": int(time.time()), "output": [*done.kept, done.item],
            "usage": usage_from_chat(done.chat_usage or NO_USAGE)}


def _parsed(body) -> CreateRequest:
    if isinstance(body, dict) and "input" not in body:
        body = {**body, "input": []}
    return parse_create_request(body)


def _request(create: CreateRequest) -> dict:
    return {"instructions": create.instructions, "params": create.params,
            "include": create.include}


def _items(tenant: Tenant, create: CreateRequest) -> list[dict]:
    """The conversation as a create with this body would continue it (the tenant's only)."""
    previous = create.previous_response_id
    if previous and not StoredResponse.objects.filter(id=previous, tenant=tenant,
                                                      store=True).exists():
        raise NotFound(f"No response found with id '{previous}'.",
                       param="previous_response_id")
    if create.conversation_id:
        conversation_check_input(tenant, create.conversation_id, create.input_items)
    items = history_items(tenant.id, previous, create.conversation_id)
    items.extend(unsealed(item) for item in resolve_item_references(tenant, create))
    return items
