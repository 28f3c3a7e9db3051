"""Reads on the request side: a tenant's stored responses and their input items."""
from .errors import InvalidRequest, NotFound
from .paging import list_body
from .models import TERMINAL_STATUSES, StoredResponse, Tenant


def response_get(tenant: Tenant, response_id: str) -> dict:
    """The response object; while it runs, with the run's current status."""
    row = (StoredResponse.objects.filter(id=response_id, tenant=tenant, store=True)
           .only("id", "resource", "status").first())
    if row is None:
        raise NotFound(f"No response found with id '{response_id}'.")
    resource = row.resource
    if row.status != resource["status"] and row.status not in TERMINAL_STATUSES:
        resource = {**resource, "status": row.status}
    return resource


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
    return list_body(items[:limit], len(items) > limit)
