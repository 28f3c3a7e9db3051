"""`item_reference` input items: each is replaced by the stored item it names.

A reference names any item of the tenant's stored (`store: true`) responses, input or
output, or of its conversations, whatever chain or conversation the request names (the
Vercel AI SDK sends its earlier assistant messages as references, without
`previous_response_id`). The items of the request's own chain or conversation are looked
at first; the ids still unknown are then looked up by index: the GIN expression index
`responses_item_ids` (responses_app migration 0007) over the ids of a row's
`input_items` and `resource->'output'`, and `conversation_items_item_id`. A response's
items can be referenced once it has finished (its output is stored with its result; the
index holds only finished rows, so the INSERT and the claim of a response never maintain
it). Another tenant's item is not found, exactly as an unknown id.
"""
import json

from django.db import connection

from conversations.items import conversation_items
from conversations.models import ConversationItem

from .request import CreateRequest
from ..errors import InvalidRequest
from ..history import chain_items
from ..models import Tenant

# The indexed expression of migration 0007, verbatim: Postgres uses the index only for
# this exact expression.
ITEM_IDS_EXPRESSION = ("(jsonb_path_query_array(input_items, '$[*].id') || "
                       "jsonb_path_query_array(resource, '$.output[*].id'))")

# The rows the index holds: stored, and finished (their output is stored).
FINISHED_STORED = "store AND status NOT IN ('queued', 'in_progress')"

# One stored response holding the id (the first the index finds: every copy of an id is
# the same item, a referenced item being stored as it resolved), and the item itself taken
# out of that row. One branch per id, each with its id as a constant: with a constant the
# planner estimates the match from the expression's statistics and takes the index (with
# an id from a join it assumes hundreds of matches and prefers a scan under LIMIT 1).
ITEM_BY_ID_SQL = f"""
(SELECT %s::text, item
   FROM (SELECT input_items, resource FROM responses
          WHERE {ITEM_IDS_EXPRESSION} @> %s::jsonb AND tenant_id = %s AND {FINISHED_STORED}
          LIMIT 1) AS holder,
        LATERAL jsonb_array_elements(
            holder.input_items || COALESCE(holder.resource->'output', '[]'::jsonb)) AS item
  WHERE item->>'id' = %s
  LIMIT 1)"""


def resolve_item_references(tenant: Tenant, create: CreateRequest) -> list[dict]:
    """The request's input items with each `item_reference` replaced by the item it names;
    400 `item_not_found` (param `input[i].id`) for the first one that names nothing."""
    wanted = {item["id"] for item in create.input_items if item["type"] == "item_reference"}
    if not wanted:
        return create.input_items
    known = _request_history_items(tenant, create)
    missing = wanted - known.keys()
    if missing:
        known.update(_stored_response_items(tenant.id, missing))
        missing -= known.keys()
    if missing:
        known.update(_conversation_items(tenant.id, missing))
    resolved = []
    for index, item in enumerate(create.input_items):
        if item["type"] != "item_reference":
            resolved.append(item)
        elif item["id"] in known:
            resolved.append(known[item["id"]])
        else:
            raise InvalidRequest(f"Item with id '{item['id']}' not found.",
                                 param=f"input[{index}].id", code="item_not_found")
    return resolved


def _request_history_items(tenant: Tenant, create: CreateRequest) -> dict[str, dict]:
    """The items of the conversation or chain the request names, by id (a chain's later
    copy of an id wins)."""
    known = {}
    if create.conversation_id:
        known = {item["id"]: item for item in conversation_items(create.conversation_id)}
    if create.previous_response_id:
        history = create.history
        if history is None:
            history = chain_items(tenant.id, create.previous_response_id) or ()
        for item in history:
            if "id" in item:
                known[item["id"]] = item
    return known


def _stored_response_items(tenant_id: int, ids: set[str]) -> dict[str, dict]:
    """Items of the tenant's stored responses with these ids, by id."""
    wanted = sorted(ids)
    params = [value for item_id in wanted
              for value in (item_id, json.dumps([item_id]), tenant_id, item_id)]
    with connection.cursor() as cursor:
        cursor.execute(" UNION ALL ".join([ITEM_BY_ID_SQL] * len(wanted)), params)
        rows = cursor.fetchall()
    return {item_id: json.loads(item) if isinstance(item, str) else item
            for item_id, item in rows}


def _conversation_items(tenant_id: int, ids: set[str]) -> dict[str, dict]:
    """Items of the tenant's conversations with these ids, by id."""
    rows = (ConversationItem.objects
            .filter(item_id__in=sorted(ids), conversation__tenant_id=tenant_id)
            .order_by("seq").values_list("item_id", "item"))
    found: dict[str, dict] = {}
    for item_id, item in rows:
        found.setdefault(item_id, item)
    return found
