"""Reading a conversation back: walk `previous_response_id` and gather its items in order.

Each stored response holds only its own input and output; the history of a response is
its ancestors' inputs and outputs, oldest first. One recursive query finds the chain.
"""
from django.db import connection

from .models import StoredResponse

MAX_CHAIN_LENGTH = 100_000

CHAIN_SQL = """
WITH RECURSIVE chain(id, previous_response_id, depth) AS (
    SELECT id, previous_response_id, 0 FROM responses
     WHERE id = %s AND tenant_id = %s AND store
    UNION ALL
    SELECT r.id, r.previous_response_id, chain.depth + 1
      FROM responses r JOIN chain ON r.id = chain.previous_response_id
     WHERE r.tenant_id = %s AND r.store AND chain.depth < %s
)
SELECT id FROM chain ORDER BY depth DESC
"""


def chain_ids(tenant_id: int, response_id: str, max_depth: int = MAX_CHAIN_LENGTH) -> list[str]:
    """Ids of `response_id` and its stored ancestors (at most `max_depth` of them), oldest
    first ([] if not found)."""
    with connection.cursor() as cursor:
        cursor.execute(CHAIN_SQL, [response_id, tenant_id, tenant_id, max_depth])
        return [row[0] for row in cursor.fetchall()]


def chain_items(tenant_id: int, response_id: str) -> list[dict] | None:
    """The conversation up to and including `response_id`; None if it is not stored."""
    ids = chain_ids(tenant_id, response_id)
    if not ids:
        return None
    rows = StoredResponse.objects.filter(id__in=ids).only("id", "input_items", "resource")
    by_id = {row.id: row for row in rows}
    items: list[dict] = []
    for rid in ids:
        row = by_id[rid]
        items.extend(row.input_items)
        items.extend(row.resource.get("output") or [])
    return items
