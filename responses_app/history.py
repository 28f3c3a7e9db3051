"""Reading a conversation back: walk `previous_response_id` and gather its items in order.

Each stored response holds only its own input and output; the history of a response is
its ancestors' inputs and outputs, oldest first. One recursive query finds the chain.
What a run sends upstream reads it `since_compaction`: the walk stops at the newest
response holding a compaction item (in its input or output), since the upstream receives
nothing from before it (context/compaction_items.py), so a long compacted chain is read
only from its latest compaction on.
"""
import orjson
from django.db import connection

MAX_CHAIN_LENGTH = 100_000

CHAIN_SQL = """
WITH RECURSIVE chain(id, previous_response_id, depth, stop) AS (
    SELECT id, previous_response_id, 0, {stop} FROM responses
     WHERE id = %s AND tenant_id = %s AND store
    UNION ALL
    SELECT r.id, r.previous_response_id, chain.depth + 1, {stop_r}
      FROM responses r JOIN chain ON r.id = chain.previous_response_id
     WHERE r.tenant_id = %s AND r.store AND chain.depth < %s AND NOT chain.stop
)
"""
IDS_TAIL = "SELECT id FROM chain ORDER BY depth DESC"
# the items in the same statement as JSON text (orjson decodes it faster than the driver):
# the output's as stored with each row (migration 0008), returned verbatim
ITEMS_TAIL = """SELECT r.input_items::text, r.output_text
  FROM chain JOIN responses r ON r.id = chain.id ORDER BY chain.depth DESC"""
FULL_CHAIN_SQL = CHAIN_SQL.format(stop="false", stop_r="false")
# whether a row's input or output holds a compaction item, kept by Postgres (migration
# 0008): the walk reads no JSON
COMPACTED_CHAIN_SQL = CHAIN_SQL.format(
    stop="input_compaction OR output_compaction",
    stop_r="r.input_compaction OR r.output_compaction")


def chain_ids(tenant_id: int, response_id: str, max_depth: int = MAX_CHAIN_LENGTH,
              since_compaction: bool = False) -> list[str]:
    """Ids of `response_id` and its stored ancestors (at most `max_depth` of them; with
    `since_compaction`, back to the newest one holding a compaction), oldest first ([] if
    not found)."""
    sql = (COMPACTED_CHAIN_SQL if since_compaction else FULL_CHAIN_SQL) + IDS_TAIL
    with connection.cursor() as cursor:
        cursor.execute(sql, [response_id, tenant_id, tenant_id, max_depth])
        return [row[0] for row in cursor.fetchall()]


def chain_items(tenant_id: int, response_id: str,
                since_compaction: bool = False) -> list[dict] | None:
    """The conversation up to and including `response_id` (from the newest response
    holding a compaction on, with `since_compaction`); None if it is not stored."""
    sql = (COMPACTED_CHAIN_SQL if since_compaction else FULL_CHAIN_SQL) + ITEMS_TAIL
    with connection.cursor() as cursor:
        cursor.execute(sql, [response_id, tenant_id, tenant_id, MAX_CHAIN_LENGTH])
        rows = cursor.fetchall()
    if not rows:
        return None
    items: list[dict] = []
    for input_items, output in rows:
        items.extend(orjson.loads(input_items))
        items.extend(orjson.loads(output))
    return items
