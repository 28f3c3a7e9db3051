"""Reading a conversation back: walk `previous_response_id` and gather its items in order.

Each stored response holds only its own input and output; the history of a response is
its ancestors' inputs and outputs, oldest first. One recursive query finds the chain.
What a run sends upstream reads it `since_compaction`: the walk stops at the newest
response holding a compaction item (in its input or output), since the upstream receives
nothing from before it (context/compaction_items.py), so a long compacted chain is read
only from its latest compaction on. A response whose compactions are all unfinished (cut
before their summary was written: they stand for nothing) does not end it: the walk goes
on past it (a second walk from its previous response; only then).
"""
import orjson
from django.db import connection

from .context.compaction_items import compacts

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
# (the oldest row's `stop` and previous response: where a walk past an unfinished
# compaction goes on)
ITEMS_TAIL = ("SELECT input_items::text, output_text, stop, previous_response_id FROM chain "
              "ORDER BY depth DESC")
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
    holding a compaction that `compacts` on, with `since_compaction`); None if it is not
    stored."""
    sql = ITEMS_SQL[bool(since_compaction)]
    items: list[dict] | None = None
    while True:
        with connection.cursor() as cursor:
            cursor.execute(sql, [response_id, tenant_id, tenant_id, MAX_CHAIN_LENGTH])
            rows = cursor.fetchall()
        if not rows:
            return items
        input_items, output, stopped, previous = rows[0]
        oldest = [*orjson.loads(input_items), *orjson.loads(output)]
        walked = list(oldest)
        for input_items, output, _, _ in rows[1:]:
            walked.extend(orjson.loads(input_items))
            walked.extend(orjson.loads(output))
        items = walked if items is None else walked + items
        if not stopped or previous is None or any(compacts(item) for item in oldest):
            return items
        response_id = previous  # its compactions are all unfinished: the walk goes on
