"""Writes of the Conversations API: create, update and delete a tenant's conversations, add
and remove their items, and the check a response created with `conversation` passes.

Items are validated and normalized exactly like response input (responses_app/create/input_items.py); the
item log itself (order, appends) is items.py, which the worker shares.
"""
from datetime import datetime, timezone

from django.db import transaction

# runs up a floor, to the create body's parsers: a conversation's items and metadata are
# validated exactly as a response's input and metadata are (one parser, one error text)
from responses_app.create.input_items import normalize_input
from responses_app.create.params import parse_metadata
from responses_app.errors import InvalidRequest
from responses_app.ids import new_id
from responses_app.models import Tenant
from responses_app.paging import list_body

from .items import append_items
from .models import MAX_ITEM_ID_LENGTH, Conversation, ConversationItem
from .selectors import (
    conversation_not_found, conversation_object, conversation_row, item_not_found)

MAX_ITEMS_PER_CALL = 20


# --- conversations -------------------------------------------------------------------------

def conversation_create(tenant: Tenant, body) -> dict:
    """A new conversation with `metadata` and up to 20 initial `items`."""
    body = _object(body, ("items", "metadata"))
    metadata = parse_metadata(body.get("metadata"))
    items = [] if body.get("items") is None else _new_items(body["items"])
    _check_item_ids(None, items, "items")
    with transaction.atomic():
        row = Conversation.objects.create(id=new_id("conv"), tenant=tenant, metadata=metadata,
                                          created_at=datetime.now(timezone.utc))
        append_items(row.id, items)
    return conversation_object(row)


def conversation_update(tenant: Tenant, conversation_id: str, body) -> dict:
    """Replace the conversation's metadata."""
    body = _object(body, ("metadata",))
    if "metadata" not in body:
        raise InvalidRequest("Missing required parameter: 'metadata'.", param="metadata",
                             code="missing_required_parameter")
    metadata = parse_metadata(body["metadata"])
    with transaction.atomic():
        # locked: a delete committed meanwhile makes it a 404, not an update of no row
        row = conversation_row(tenant, conversation_id, lock=True)
        row.metadata = metadata
        row.save(update_fields=["metadata"])
    return conversation_object(row)


def conversation_delete(tenant: Tenant, conversation_id: str) -> dict:
    """Delete the conversation and its items (its responses stay)."""
    with transaction.atomic():
        # locked first: a run appending its turn right now finishes before, or finds it gone
        conversation = conversation_row(tenant, conversation_id, lock=True)
        conversation.delete()
    return {"id": conversation_id, "object": "conversation.deleted", "deleted": True}


# --- items ---------------------------------------------------------------------------------

def items_add(tenant: Tenant, conversation_id: str, body) -> dict:
    """Append up to 20 items; returns them as a list."""
    body = _object(body, ("items",))
    if body.get("items") is None:
        raise InvalidRequest("Missing required parameter: 'items'.", param="items",
                             code="missing_required_parameter")
    items = _new_items(body["items"])
    if not items:
        raise InvalidRequest("'items' must hold at least one item.", param="items",
                             code="invalid_value")
    with transaction.atomic():
        # locked: a concurrent add cannot slip the same item id in between check and insert
        conversation = conversation_row(tenant, conversation_id, lock=True)
        _check_item_ids(conversation.id, items, "items")
        append_items(conversation.id, items)
    return list_body(items, False)


def item_delete(tenant: Tenant, conversation_id: str, item_id: str) -> dict:
    """Remove one item; returns the conversation."""
    conversation = conversation_row(tenant, conversation_id)
    deleted, _ = ConversationItem.objects.filter(conversation=conversation,
                                                 item_id=item_id).delete()
    if not deleted:
        raise item_not_found(item_id)
    return conversation_object(conversation)


# --- responses with `conversation` ---------------------------------------------------------

def conversation_check_input(tenant: Tenant, conversation_id: str, input_items: list[dict]):
    """The conversation must be the tenant's and the input must not reuse its item ids."""
    if not Conversation.objects.filter(id=conversation_id, tenant=tenant).exists():
        raise conversation_not_found(conversation_id, param="conversation")
    _check_item_ids(conversation_id, input_items, "input")


# --- helpers -------------------------------------------------------------------------------

def _object(body, parameters: tuple[str, ...]) -> dict:
    """The body, a JSON object of these parameters only (OpenAI's 400 `unknown_parameter`)."""
    if not isinstance(body, dict):
        raise InvalidRequest("The request body must be a JSON object.")
    for name in body:
        if name not in parameters:
            raise InvalidRequest(f"Unknown parameter: '{name}'.", param=name,
                                 code="unknown_parameter")
    return body


def _new_items(value) -> list[dict]:
    """Items as response input accepts them (normalized, with ids), at most 20, no references."""
    if not isinstance(value, list):
        raise InvalidRequest("'items' must be a list of items.", param="items",
                             code="invalid_type")
    if len(value) > MAX_ITEMS_PER_CALL:
        raise InvalidRequest(f"'items' holds {len(value)} items; you may add up to "
                             f"{MAX_ITEMS_PER_CALL} at a time.", param="items",
                             code="invalid_value")
    items = normalize_input(value, param="items")
    for index, item in enumerate(items):
        if item["type"] == "item_reference":
            raise InvalidRequest("A conversation cannot hold an item_reference; add the item "
                                 "itself.", param=f"items[{index}].type", code="invalid_value")
    return items


def _check_item_ids(conversation_id: str | None, items: list[dict], param: str) -> None:
    """Item ids are unique within a conversation (references excepted: they name its items)."""
    named = [(index, item["id"]) for index, item in enumerate(items)
             if item["type"] != "item_reference"]
    existing = set()
    if conversation_id is not None:
        existing = set(ConversationItem.objects.filter(
            conversation_id=conversation_id, item_id__in=[item_id for _, item_id in named])
            .values_list("item_id", flat=True))
    seen = set()
    for index, item_id in named:
        if len(item_id) > MAX_ITEM_ID_LENGTH:
            raise InvalidRequest(f"Item ids are at most {MAX_ITEM_ID_LENGTH} characters.",
                                 param=f"{param}[{index}].id", code="invalid_value")
        if item_id in existing or item_id in seen:
            raise InvalidRequest(f"Duplicate item id '{item_id}': the conversation already "
                                 f"holds an item with this id.", param=f"{param}[{index}].id",
                                 code="invalid_value")
        seen.add(item_id)
