"""Compacting a conversation: the items it keeps (the newest user messages, at most
COMPACTION_KEEP_USER_CHARS of their text, the newest always), then one compaction item
sealing the route model's summary of the whole conversation (summary.py: written by the
worker's upstream call, worker/summary_call.py) and the items
that decide which tools are loaded (compaction_items.CARRIED), which a summary cannot stand
for. This is the
output of `POST /v1/responses/compact` and what server-side compaction (context_management)
puts in a response's output; sent back as input, the upstream receives the summary in
place of the history (compaction_items.upstream_items)."""
from dataclasses import dataclass

from django.conf import settings

from .compaction_items import carried_items, compaction_item, upstream_items


@dataclass
class Compacted:
    kept: list[dict]  # the user messages kept, oldest first
    item: dict  # the compaction item
    chat_usage: dict | None  # of the summary call


def kept_user_messages(items: list[dict]) -> list[dict]:
    """The newest user messages whose text fits COMPACTION_KEEP_USER_CHARS (the newest one
    always), oldest first."""
    kept, budget = [], settings.COMPACTION_KEEP_USER_CHARS
    for item in reversed(items):
        if item.get("type") != "message" or item.get("role") != "user":
            continue
        size = sum(len(part.get("text") or "") for part in item.get("content") or ())
        if kept and size > budget:
            break
        budget -= size
        kept.append(item)
    kept.reverse()
    return kept


def compacted(summary: str, usage: dict | None, items: list[dict]) -> Compacted:
    """What replaces the conversation of `items`, given its `summary` (and the usage of
    the call that wrote it)."""
    window = upstream_items(items)  # an earlier compaction's carried items carried again
    return Compacted(kept=kept_user_messages(window),
                     item=compaction_item(summary, carried_items(window)), chat_usage=usage)
