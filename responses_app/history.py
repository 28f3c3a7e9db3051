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
WITH RECURSIVE chain(id, previous_response_id, depth, stop{columns}) AS (
    SELECT id, previous_response_id, 0, {stop}{columns} FROM responses
     WHERE id = %s AND tenant_id = %s AND store
    UNION ALL
    SELECT r.id, r.previous_response_id, chain.depth + 1, {stop_r}{r_columns}
      FROM responses r JOIN chain ON r.id = chain.previous_response_id
     WHERE r.tenant_id = %s AND r.store AND chain.depth < %s AND NOT chain.stop
)
"""
IDS_TAIL = "SELECT id FROM chain ORDER BY depth DESC"
# the items in the same statement as JSON text (orjson decodes it faster than the driver):
# the output's as stored with each row (migration 0008), returned verbatim; both carried
# by the walk, which has the row at hand (a join back to `responses` by id after it looked
# each row up a second time: ~1 ms of a 1,000-turn chain's read)
ITEMS_TAIL = "SELECT input_items::text, output_text FROM chain ORDER BY depth DESC"
# whether a row's input or output holds a compaction item, kept by Postgres (migration
# 0008): the walk reads no JSON
_STOPS = {False: {"stop": "false", "stop_r": "false"},
          True: {"stop": "input_compaction OR output_compaction",
                 "stop_r": "r.input_compaction OR r.output_compaction"}}
_NO_COLUMNS = {"columns": "", "r_columns": ""}
_ITEM_COLUMNS = {"columns": ", input_items, output_text",
                 "r_columns": ", r.input_items, r.output_text"}
IDS_SQL = {compacted: CHAIN_SQL.format(**stops, **_NO_COLUMNS) + IDS_TAIL
           for compacted, stops in _STOPS.items()}
ITEMS_SQL = {compacted: CHAIN_SQL.format(**stops, **_ITEM_COLUMNS) + ITEMS_TAIL
             for compacted, stops in _STOPS.items()}


def chain_ids(tenant_id: int, response_id: str, max_depth: int = MAX_CHAIN_LENGTH,
              since_compaction: bool = False) -> list[str]:
    """Ids of `response_id` and its stored ancestors (at most `max_depth` of them; with
    `since_compaction`, back to the newest one holding a compaction), oldest first ([] if
    not found)."""
    sql = IDS_SQL[bool(since_compaction)]
    with connection.cursor() as cursor:
        cursor.execute(sql, [response_id, tenant_id, tenant_id, max_depth])
        return [row[0] for row in cursor.fetchall()]


def chain_items(tenant_id: int, response_id: str,
                since_compaction: bool = False) -> list[dict] | None:
    """The conversation up to and including `response_id` (from the newest response
    holding a compaction on, with `since_compaction`); None if it is not stored."""
    sql = ITEMS_SQL[bool(since_compaction)]
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
