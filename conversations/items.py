"""A conversation's item log, read and written by both sides: the items in order, and
appending a batch of items.

An append first locks the conversation row, so each batch (one response's input and
output, or one call of the items API) lands contiguous even when runs on one conversation
finish at the same time, and a batch for a conversation deleted meanwhile is dropped.
"""
from datetime import datetime, timezone

from django.db import transaction

from .models import Conversation, ConversationItem


def conversation_items(conversation_id: str) -> list[dict]:
    """Every item of the conversation, oldest first."""
    return list(ConversationItem.objects.filter(conversation_id=conversation_id)
                .order_by("seq").values_list("item", flat=True))


def append_items(conversation_id: str, items: list[dict], *,
                 response_id: str | None = None) -> bool:
    """Append `items` in order; False if the conversation no longer exists.

    An item whose id the conversation already holds is skipped (an `item_reference` that
    resolved to one of its own items, or a client id reused by two concurrent runs).
    """
    with transaction.atomic():
        locked = (Conversation.objects.select_for_update()
                  .filter(id=conversation_id).values_list("id", flat=True))
        if not list(locked):
            return False
        now = datetime.now(timezone.utc)
        ConversationItem.objects.bulk_create(
            [ConversationItem(conversation_id=conversation_id, item_id=item["id"], item=item,
                              created_at=now, response_id=response_id) for item in items],
            ignore_conflicts=True,
        )
    return True

