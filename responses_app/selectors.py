"""Reads on the request side: a tenant's stored responses and their input items."""
from .errors import InvalidRequest, NotFound
from .models import StoredResponse, Tenant


def response_get(tenant: Tenant, response_id: str) -> StoredResponse:
    row = (StoredResponse.objects.filter(id=response_id, tenant=tenant, store=True)
           .only("id", "resource", "status").first())
    if row is None:
        raise NotFound(f"No response found with id '{response_id}'.")
    return row


def input_items_page(tenant: Tenant, response_id: str, *, after: str | None, limit: int,
                     order: str) -> dict:
    """One page of a response's own input items, OpenAI list shape."""
    row = (StoredResponse.objects.filter(id=response_id, tenant=tenant, store=True)
           .only("id", "input_items").first())
    if row is None:
        raise NotFound(f"No response found with id '{response_id}'.")
    items = list(row.input_items)
    if order == "desc":
        items.reverse()
    if after is not None:
        ids = [item.get("id") for item in items]
        if after not in ids:
            raise InvalidRequest(f"No input item with id '{after}' in this response.",
                                 param="after", code="invalid_value")
        items = items[ids.index(after) + 1:]
    page = items[:limit]
    return {
        "object": "list",
        "data": page,
        "first_id": page[0]["id"] if page else None,
        "last_id": page[-1]["id"] if page else None,
        "has_more": len(items) > limit,
    }
