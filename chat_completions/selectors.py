"""Reads and writes of stored chat completions, always scoped to the caller's tenant
(another tenant's id is a 404, as an unknown one)."""
from django.db import transaction

from responses_app.errors import InvalidRequest, NotFound
from responses_app.paging import list_body, page_params

from .models import StoredChatCompletion
from .request import validated_metadata


def _page_params(query) -> tuple[str | None, int, str]:
    params = page_params(query, default_order="asc")  # OpenAI's chat lists: oldest first
    return params.after, params.limit, params.order


def completion_row(tenant, completion_id: str, lock: bool = False) -> StoredChatCompletion:
    """The tenant's stored chat completion (locked FOR UPDATE if `lock`), else a 404."""
    rows = StoredChatCompletion.objects.filter(id=completion_id, tenant=tenant)
    row = (rows.select_for_update() if lock else rows).first()
    if row is None:
        raise NotFound(f"No chat completion found with id '{completion_id}'.")
    return row


def completion_list(tenant, query) -> dict:
    """`GET /v1/chat/completions`: `model`, `metadata[key]=value`, `after`, `limit`, `order`
    (by creation time, ascending by default, as OpenAI's)."""
    after, limit, order = _page_params(query)
    rows = StoredChatCompletion.objects.filter(tenant=tenant)
    if query.get("model"):
        rows = rows.filter(model=query["model"])
    wanted = {key[9:-1]: query[key] for key in query
              if key.startswith("metadata[") and key.endswith("]")}
    if wanted:  # JSON containment: a key is a key (`a__regex` is no lookup of Django's)
        rows = rows.filter(metadata__contains=wanted)
    ordering = ("created_at", "id") if order == "asc" else ("-created_at", "-id")
    rows = rows.order_by(*ordering)
    if after:
        cursor = completion_row(tenant, after)
        if order == "asc":
            rows = rows.filter(created_at__gte=cursor.created_at).exclude(
                created_at=cursor.created_at, id__lte=cursor.id)
        else:
            rows = rows.filter(created_at__lte=cursor.created_at).exclude(
                created_at=cursor.created_at, id__gte=cursor.id)
    page = list(rows[:limit + 1])
    return list_body([row.as_object() for row in page[:limit]], len(page) > limit)


def completion_messages(tenant, completion_id: str, query) -> dict:
    """`GET /v1/chat/completions/{id}/messages`: the request's messages, with ids."""
    after, limit, order = _page_params(query)
    row = completion_row(tenant, completion_id)
    messages = [{"id": f"{row.id}-{index}", **message}
                for index, message in enumerate(row.request_messages)]
    if order == "desc":
        messages.reverse()
    if after:
        ids = [message["id"] for message in messages]
        if after not in ids:
            raise NotFound(f"No message found with id '{after}'.")
        messages = messages[ids.index(after) + 1:]
    return list_body(messages[:limit], len(messages) > limit)


def completion_update(tenant, completion_id: str, payload) -> dict:
    """`POST /v1/chat/completions/{id}`: its metadata replaced (the only field that is)."""
    if not isinstance(payload, dict) or "metadata" not in payload or set(payload) - {"metadata"}:
        raise InvalidRequest("Only 'metadata' can be updated.", param="metadata",
                             code="invalid_value")
    metadata = validated_metadata(payload["metadata"])
    with transaction.atomic():
        # locked: a delete committed meanwhile makes it a 404, not an update of no row
        row = completion_row(tenant, completion_id, lock=True)
        row.metadata = metadata
        row.save(update_fields=["metadata"])
    return row.as_object()


def completion_delete(tenant, completion_id: str) -> dict:
    deleted, _ = StoredChatCompletion.objects.filter(id=completion_id, tenant=tenant).delete()
    if not deleted:
        raise NotFound(f"No chat completion found with id '{completion_id}'.")
    return {"object": "chat.completion.deleted", "id": completion_id, "deleted": True}
