"""Cursor paging of the Vector Stores API's lists: `after` / `before` (an object id),
`limit` (1-100, default 20), `order` (by creation, `desc` by default), OpenAI's list shape.
Rows are ordered by (created_at, pk), so equal creation times page stably."""
from django.db.models import Q

from responses_app.errors import InvalidRequest
from responses_app.paging import list_body, page_params


def page(rows, query, *, id_field: str, render, max_limit: int = 100) -> dict:
    params = page_params(query, max_limit=max_limit)
    limit, ascending = params.limit, params.order == "asc"
    after, before = query.get("after"), query.get("before")
    if after:
        rows = rows.filter(_beyond(_anchor(rows, id_field, after, "after"), ascending))
    if before:  # the `limit` rows just before the anchor, still in `order`
        rows = rows.filter(_beyond(_anchor(rows, id_field, before, "before"), not ascending))
        ascending = not ascending
    rows = rows.order_by(*(("created_at", "pk") if ascending else ("-created_at", "-pk")))
    found = list(rows[:limit + 1])
    data = [render(row) for row in found[:limit]]
    if before:
        data.reverse()
    return list_body(data, len(found) > limit)


def _anchor(rows, id_field: str, value: str, param: str):
    anchor = rows.filter(**{id_field: value}).values("created_at", "pk").first()
    if anchor is None:
        raise InvalidRequest(f"No object with id '{value}' in this list.", param=param,
                             code="invalid_value")
    return anchor


def _beyond(anchor: dict, ascending: bool) -> Q:
    at, pk = anchor["created_at"], anchor["pk"]
    if ascending:
        return Q(created_at__gt=at) | Q(created_at=at, pk__gt=pk)
    return Q(created_at__lt=at) | Q(created_at=at, pk__lt=pk)
