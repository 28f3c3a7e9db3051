"""A tool output in a request must answer a call: one in the request's input, or in the
chain or conversation it continues. An output that answers nothing cannot be placed in the
upstream's message list, and OpenAI refuses it with a 400 naming its call id; so do we.
Everything else about calls and outputs is repaired before the upstream call
(translation.history_repair)."""
from conversations.items import conversation_items

from .request import CreateRequest
from ..context.compaction_items import carried_in
from ..translation.client_tools import OUTPUT_TYPES
from ..errors import InvalidRequest
from ..history import chain_items
from ..models import Tenant

CALLS = {"function_call": "function_call_output", "custom_tool_call": "custom_tool_call_output",
         **OUTPUT_TYPES}
OUTPUT_NAMES = {"function_call_output": "function call output",
                "custom_tool_call_output": "custom tool call output",
                **{output: output.replace("_", " ") for output in OUTPUT_TYPES.values()}}


def check_tool_outputs(tenant: Tenant, create: CreateRequest, input_items: list[dict]) -> None:
    """400 for the first output of the input (references resolved) whose call is nowhere;
    reads the history only when the input alone leaves one unanswered."""
    orphans = _unanswered(input_items, input_items)
    if orphans:  # a call a compaction in the input carries (sent after it, alone)
        orphans = _unanswered(orphans, carried_in(input_items))
    if orphans and create.history is not None:  # supplied by the front door
        orphans = _unanswered(orphans, create.history)
    elif orphans and (create.previous_response_id or create.conversation_id):
        history = (chain_items(tenant.id, create.previous_response_id)
                   if create.previous_response_id else
                   conversation_items(create.conversation_id)) or []
        orphans = _unanswered(orphans, history)
    if orphans:
        item = orphans[0]
        raise InvalidRequest(f"No tool call found for {OUTPUT_NAMES[item['type']]} with "
                             f"call_id {item['call_id']}.", param="input")


def _unanswered(outputs: list[dict], calls: list[dict]) -> list[dict]:
    """The outputs among `outputs` no call of its kind in `calls` answers."""
    called = {(CALLS[item["type"]], item.get("call_id")) for item in calls
              if item.get("type") in CALLS}
    return [item for item in outputs if item.get("type") in OUTPUT_NAMES
            and (item["type"], item.get("call_id")) not in called]
