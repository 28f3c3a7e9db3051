"""Cursor paging of item lists: the `after`, `limit` and `order` query parameters, and
OpenAI's list shape for one page."""
from dataclasses import dataclass

from .errors import InvalidRequest


@dataclass(frozen=True)
class PageParams:
    after: str | None
    limit: int
    order: str  # "asc" or "desc"


def page_params(query, *, default_order: str = "desc", default_limit: int = 20,
                max_limit: int = 100) -> PageParams:
    """Read and check `after`, `limit` (1 to `max_limit`, default `default_limit`) and
    `order` (default `default_order`): every list endpoint's own defaults, one check."""
    order = query.get("order", default_order)
    if order not in ("asc", "desc"):
        raise InvalidRequest("'order' must be 'asc' or 'desc'.", param="order",
                             code="invalid_value")
    try:
        limit = int(query.get("limit", default_limit))
    except ValueError:
        limit = 0
    if not 1 <= limit <= max_limit:
        raise InvalidRequest(f"'limit' must be an integer from 1 to {max_limit}.",
                             param="limit", code="invalid_value")
    return PageParams(after=query.get("after"), limit=limit, order=order)


def list_body(page: list[dict], has_more: bool) -> dict:
    """`{"object": "list", "data", "first_id", "last_id", "has_more"}` for items with ids."""
    return {
        "object": "list",
        "data": page,
        "first_id": page[0]["id"] if page else None,
        "last_id": page[-1]["id"] if page else None,
        "has_more": has_more,
    }
