"""Reads of the Files API: a tenant's file and pages of its files, in the API's shapes.
Another tenant's file is not found, exactly like a missing one."""
from responses_app.errors import InvalidRequest, NotFound
from responses_app.models import Tenant
from responses_app.paging import list_body, page_params

from .models import StoredFile

MAX_PAGE = 10_000  # OpenAI's: `limit` 1-10,000, default 10,000


def file_object(row: StoredFile) -> dict:
    return {
        "id": row.id, "object": "file", "bytes": row.bytes,
        "created_at": int(row.created_at.timestamp()), "filename": row.filename,
        "purpose": row.purpose, "status": "processed",
        "expires_at": int(row.expires_at.timestamp()) if row.expires_at else None,
        "status_details": None,
    }


def file_not_found(file_id: str, param: str | None = None) -> NotFound:
    return NotFound(f"No such File object: {file_id}", param=param)


def file_row(tenant: Tenant | int, file_id: str, lock: bool = False) -> StoredFile:
    """The tenant's file (locked FOR UPDATE if `lock`), else a 404."""
    rows = StoredFile.objects.filter(id=file_id, tenant=tenant)
    row = (rows.select_for_update() if lock else rows).first()
    if row is None:
        raise file_not_found(file_id)
    return row


def file_get(tenant: Tenant, file_id: str) -> dict:
    return file_object(file_row(tenant, file_id))


def files_page(tenant: Tenant, query) -> dict:
    """One page of the tenant's files: `after`, `limit`, `order` (default desc), `purpose`."""
    params = page_params(query, default_limit=MAX_PAGE, max_limit=MAX_PAGE)
    order, limit = params.order, params.limit
    rows = StoredFile.objects.filter(tenant=tenant)
    if query.get("purpose"):
        rows = rows.filter(purpose=query["purpose"])
    rows = rows.order_by(*(("created_at", "id") if order == "asc" else ("-created_at", "-id")))
    after = query.get("after")
    if after:
        anchor = StoredFile.objects.filter(tenant=tenant, id=after).first()
        if anchor is None:
            raise InvalidRequest(f"No file with id '{after}'.", param="after",
                                 code="invalid_value")
        rows = rows.filter(_beyond(anchor, order))
    page = [file_object(row) for row in rows[:limit + 1]]
    return list_body(page[:limit], len(page) > limit)


def _beyond(anchor: StoredFile, order: str):
    """Rows after `anchor` in the order (created_at, id), ascending or descending."""
    from django.db.models import Q

    if order == "asc":
        return Q(created_at__gt=anchor.created_at) | Q(created_at=anchor.created_at,
                                                        id__gt=anchor.id)
    return Q(created_at__lt=anchor.created_at) | Q(created_at=anchor.created_at,
                                                    id__lt=anchor.id)
