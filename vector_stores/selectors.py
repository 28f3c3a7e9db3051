"""Reads of the Vector Stores API in its shapes: stores (with file counts, usage and status
read from their files), store files, file batches. Another tenant's store, file or batch
is not found, exactly like a missing one."""
from datetime import timedelta

from django.db.models import Count, Q, Sum
from django.utils import timezone

from responses_app.errors import NotFound
from responses_app.models import Tenant

from . import paging
from .models import FILE_STATUSES, Chunk, FileBatch, VectorStore, VectorStoreFile

POLL_AFTER_MS = "200"  # the openai SDK's pollers wait this long between polls


def store_not_found(store_id: str, param: str | None = None) -> NotFound:
    return NotFound(f"No vector store found with id '{store_id}'.", param=param)


def store_row(tenant: Tenant, store_id: str, lock: bool = False) -> VectorStore:
    rows = VectorStore.objects.filter(id=store_id, tenant=tenant)
    row = (rows.select_for_update() if lock else rows).first()
    if row is None:
        raise store_not_found(store_id)
    return row


def _counted(rows):
    """Store or batch rows annotated with their files' counts per status and usage."""
    counts = {f"n_{status}": Count("files", filter=Q(files__status=status))
              for status in FILE_STATUSES}
    return rows.annotate(n_total=Count("files"), **counts)


def file_counts(row) -> dict:
    counts = {status: getattr(row, f"n_{status}") for status in FILE_STATUSES}
    counts["total"] = row.n_total
    return counts


def store_object(row: VectorStore) -> dict:
    counts = file_counts(row)
    expires_at = None
    if row.expires_after_days is not None:
        expires_at = row.last_active_at + timedelta(days=row.expires_after_days)
    if expires_at is not None and expires_at <= timezone.now():
        status = "expired"
    else:
        status = "in_progress" if counts["in_progress"] else "completed"
    return {
        "id": row.id, "object": "vector_store", "created_at": int(row.created_at.timestamp()),
        "name": row.name, "description": row.description or None,
        "usage_bytes": row.usage or 0, "file_counts": counts, "status": status,
        "expires_after": ({"anchor": "last_active_at", "days": row.expires_after_days}
                          if row.expires_after_days is not None else None),
        "expires_at": int(expires_at.timestamp()) if expires_at else None,
        "last_active_at": int(row.last_active_at.timestamp()), "metadata": row.metadata,
    }


def _stores(tenant: Tenant):
    return _counted(VectorStore.objects.filter(tenant=tenant)).annotate(
        usage=Sum("files__usage_bytes"))


def store_get(tenant: Tenant, store_id: str) -> dict:
    row = _stores(tenant).filter(id=store_id).first()
    if row is None:
        raise store_not_found(store_id)
    return store_object(row)


def stores_page(tenant: Tenant, query) -> dict:
    return paging.page(_stores(tenant), query, id_field="id", render=store_object)


def store_file_object(row: VectorStoreFile) -> dict:
    return {
        "id": row.file_id, "object": "vector_store.file", "usage_bytes": row.usage_bytes,
        "created_at": int(row.created_at.timestamp()), "vector_store_id": row.store_id,
        "status": row.status, "last_error": row.last_error, "attributes": row.attributes,
        "chunking_strategy": row.chunking_strategy,
    }


def store_file_not_found(file_id: str) -> NotFound:
    return NotFound(f"No file found with id '{file_id}' in this vector store.")


def store_file_row(tenant: Tenant, store_id: str, file_id: str,
                   lock: bool = False) -> VectorStoreFile:
    """The store's file (its row locked FOR UPDATE if `lock`), else a 404."""
    store = store_row(tenant, store_id)
    rows = VectorStoreFile.objects.filter(store=store, file_id=file_id)
    row = (rows.select_for_update() if lock else rows).first()
    if row is None:
        raise store_file_not_found(file_id)
    return row


def store_file_get(tenant: Tenant, store_id: str, file_id: str) -> dict:
    return store_file_object(store_file_row(tenant, store_id, file_id))


def store_files_page(tenant: Tenant, store_id: str, query, batch_id: str | None = None) -> dict:
    store = store_row(tenant, store_id)
    rows = VectorStoreFile.objects.filter(store=store)
    if batch_id is not None:
        rows = rows.filter(batch=batch_row(tenant, store_id, batch_id))
    status = query.get("filter")
    if status:
        if status not in FILE_STATUSES:
            from responses_app.errors import InvalidRequest

            raise InvalidRequest(f"'filter' must be one of {', '.join(FILE_STATUSES)}.",
                                 param="filter", code="invalid_value")
        rows = rows.filter(status=status)
    return paging.page(rows, query, id_field="file_id", render=store_file_object)


def store_file_content(tenant: Tenant, store_id: str, file_id: str) -> dict:
    """The file's chunks as ingested, in order (the SDK's `files.content`)."""
    row = store_file_row(tenant, store_id, file_id)
    texts = Chunk.objects.filter(store_file=row).order_by("position").values_list("text",
                                                                                  flat=True)
    return {"object": "vector_store.file_content.page",
            "data": [{"type": "text", "text": text} for text in texts],
            "has_more": False, "next_page": None}


def batch_row(tenant: Tenant, store_id: str, batch_id: str) -> FileBatch:
    store = store_row(tenant, store_id)
    row = _counted(FileBatch.objects.filter(store=store, id=batch_id)).first()
    if row is None:
        raise NotFound(f"No file batch found with id '{batch_id}'.")
    return row


def batch_object(row: FileBatch) -> dict:
    counts = file_counts(row)
    if row.cancelled:
        status = "cancelled"
    elif counts["in_progress"]:
        status = "in_progress"
    elif counts["total"] and counts["failed"] == counts["total"]:
        status = "failed"
    else:
        status = "completed"
    return {"id": row.id, "object": "vector_store.files_batch",
            "created_at": int(row.created_at.timestamp()), "vector_store_id": row.store_id,
            "status": status, "file_counts": counts}


def batch_get(tenant: Tenant, store_id: str, batch_id: str) -> dict:
    return batch_object(batch_row(tenant, store_id, batch_id))
