"""A response's chain as turns: its stored ancestors, itself, and the turns that followed.

Ancestors come from the recursive chain walk in `history`, later turns from one recursive
query over `previous_response_id`, both bounded. Where a turn was continued more than once the
timeline follows the newest continuation and lists the others as branches. Three queries
whatever the chain's length, none per turn.
"""
from dataclasses import dataclass, field

from django.db import connection

from ..context.compaction_items import compacts
from ..history import chain_ids
from ..models import StoredResponse
from .items import ItemView, describe_items, pretty_json

MAX_TURNS_BEFORE = 50
MAX_TURNS_AFTER = 50
MAX_LATER_ROWS = 200  # continuations read (branches included)

LATER_SQL = """
WITH RECURSIVE later(id, previous_response_id, created_at, depth) AS (
    SELECT id, previous_response_id, created_at, 1 FROM responses
     WHERE previous_response_id = %s AND tenant_id = %s AND store
    UNION ALL
    SELECT r.id, r.previous_response_id, r.created_at, later.depth + 1
      FROM responses r JOIN later ON r.previous_response_id = later.id
     WHERE r.tenant_id = %s AND r.store AND later.depth < %s
)
SELECT id, previous_response_id, created_at, depth FROM later LIMIT %s
"""


@dataclass
class Turn:
    response: StoredResponse
    is_current: bool
    input_items: list[ItemView]
    output_items: list[ItemView]
    usage: dict | None
    latency_seconds: float | None
    error: dict | None
    incomplete_reason: str | None
    request_json: str
    branches: list[str] = field(default_factory=list)  # other continuations of this turn
    compacted: bool = False  # holds a compaction: the upstream saw nothing from before it
    truncation_auto: bool = False  # asked truncation "auto": its oldest messages may be cut


@dataclass
class Timeline:
    turns: list[Turn]
    earlier_id: str | None  # the turn before the oldest shown, when the walk stopped short
    later_id: str | None  # the turn after the newest shown, when there are more
    previous_id: str | None
    next_ids: list[str]


def _later_line(tenant_id: int, response_id: str) -> tuple[list[str], dict[str, list[str]]]:
    """The newest line of continuations after `response_id`, and every turn's children."""
    with connection.cursor() as cursor:
        cursor.execute(LATER_SQL, [response_id, tenant_id, tenant_id, MAX_TURNS_AFTER + 1,
                                   MAX_LATER_ROWS])
        rows = cursor.fetchall()
    # No ORDER BY in SQL: the walk goes level by level and stops at the LIMIT, so a response
    # continued a million times costs MAX_LATER_ROWS rows, not a million.
    rows.sort(key=lambda row: (row[2], row[0]), reverse=True)  # newest first
    children: dict[str, list[str]] = {}
    for child, parent, _, _ in rows:
        children.setdefault(parent, []).append(child)
    line, cursor_id = [], response_id
    while children.get(cursor_id):
        cursor_id = children[cursor_id][0]
        line.append(cursor_id)
    return line, children


def _turn(row: StoredResponse, is_current: bool, branches: list[str]) -> Turn:
    resource = row.resource or {}
    latency = None
    if row.completed_at is not None:
        latency = (row.completed_at - row.created_at).total_seconds()
    return Turn(
        response=row, is_current=is_current,
        input_items=describe_items(row.input_items),
        output_items=describe_items(resource.get("output")),
        usage=resource.get("usage"), latency_seconds=latency,
        error=resource.get("error"),
        incomplete_reason=(resource.get("incomplete_details") or {}).get("reason"),
        request_json=pretty_json(row.request), branches=branches,
        compacted=any(compacts(item) for item in
                      [*(row.input_items or ()), *(resource.get("output") or ())]
                      if isinstance(item, dict)),
        truncation_auto=((row.request or {}).get("params") or {}).get("truncation") == "auto",
    )


def response_timeline(response: StoredResponse) -> Timeline:
    """The turns around `response`, oldest first."""
    before = chain_ids(response.tenant_id, response.id, max_depth=MAX_TURNS_BEFORE)[:-1]
    later, children = _later_line(response.tenant_id, response.id)
    later, more_later = later[:MAX_TURNS_AFTER], later[MAX_TURNS_AFTER:]
    rows = {row.id: row for row in StoredResponse.objects.filter(id__in=before + later)}
    earlier_id = None
    if len(before) == MAX_TURNS_BEFORE and before[0] in rows:
        earlier_id = rows[before[0]].previous_response_id
    rows[response.id] = response
    ids = [rid for rid in before + [response.id] + later if rid in rows]
    turns = []
    for rid in ids:
        branches = children.get(rid, [])[1:] if rid == response.id or rid in later else []
        turns.append(_turn(rows[rid], rid == response.id, branches))
    return Timeline(turns=turns, earlier_id=earlier_id,
                    later_id=more_later[0] if more_later else None,
                    previous_id=before[-1] if before else None,
                    next_ids=children.get(response.id, []))
