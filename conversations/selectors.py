"""Reads of the Conversations API: a tenant's conversation and its items, in the shapes the
API returns. A conversation of another tenant is not found, exactly like a missing one."""
from responses_app.errors import InvalidRequest, NotFound
from responses_app.models import Tenant
from responses_app.paging import PageParams, list_body

from .models import Conversation, ConversationItem


def conversation_object(row: Conversation) -> dict:
    return {"id": row.id, "object": "conversation",
            "created_at": int(row.created_at.timestamp()), "metadata": row.metadata}


def conversation_row(tenant: Tenant, conversation_id: str, lock: bool = False) -> Conversation:
    """The tenant's conversation (locked FOR UPDATE if `lock`), else a 404."""
    rows = Conversation.objects.filter(id=conversation_id, tenant=tenant)
    row = (rows.select_for_update() if lock else rows).first()
    if row is None:
        raise conversation_not_found(conversation_id)
    return row


def conversation_get(tenant: Tenant, conversation_id: str) -> dict:
    return conversation_object(conversation_row(tenant, conversation_id))


def items_page(tenant: Tenant, conversation_id: str, params: PageParams) -> dict:
    """One page of the conversation's items, OpenAI list shape."""
    conversation = conversation_row(tenant, conversation_id)
    rows = ConversationItem.objects.filter(conversation=conversation)
    if params.after is not None:
        anchor = rows.filter(item_id=params.after).values_list("seq", flat=True).first()
        if anchor is None:
            raise InvalidRequest(f"No item with id '{params.after}' in this conversation.",
                                 param="after", code="invalid_value")
        rows = rows.filter(seq__gt=anchor) if params.order == "asc" else rows.filter(seq__lt=anchor)
    rows = rows.order_by("seq" if params.order == "asc" else "-seq")
    page = list(rows.values_list("item", flat=True)[:params.limit + 1])
    return list_body(page[:params.limit], len(page) > params.limit)


def item_get(tenant: Tenant, conversation_id: str, item_id: str) -> dict:
    conversation = conversation_row(tenant, conversation_id)
    item = (ConversationItem.objects.filter(conversation=conversation, item_id=item_id)
            .values_list("item", flat=True).first())
    if item is None:
        raise item_not_found(item_id)
    return item


def conversation_not_found(conversation_id: str, param: str | None = None) -> NotFound:
    return NotFound(f"Conversation with id '{conversation_id}' not found.", param=param)


def item_not_found(item_id: str) -> NotFound:
    return NotFound(f"Item with id '{item_id}' not found.")
