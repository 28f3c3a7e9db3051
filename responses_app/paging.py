"""Cursor paging of item lists: the `after`, `limit` and `order` query parameters, and
OpenAI's list shape for one page."""
from dataclasses import dataclass

from .errors import InvalidRequest


@dataclass(frozen=True)
class PageParams:
    after: str | None
    limit: int
    order: str  # "asc" or "desc"


def page_params(query) -> PageParams:
    """Read and check `after`, `limit` (1-100, default 20), `order` (default desc)."""
    order = query.get("order", "desc")
    if order not in ("asc", "desc"):
        raise InvalidRequest("'order' must be 'asc' or 'desc'.", param="order",
                             code="invalid_value")
    try:
        limit = int(query.get("limit", 20))
    except ValueError:
        limit = 0
    if not 1 <= limit <= 100:
        raise InvalidRequest("'limit' must be an integer from 1 to 100.", param="limit",
                             code="invalid_value")
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
