"""Writes of the Files API: storing an upload (its bytes first, then its row) and
deleting a file (its row, then its bytes once that is committed)."""
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from responses_app.errors import APIError, InvalidRequest
from responses_app.ids import new_id
from responses_app.models import Tenant

from .models import PURPOSES, StoredFile
from .selectors import file_object, file_row
from .storage import file_storage

MAX_FILENAME = 512


class FileTooLarge(APIError):
    status = 413
    code = "file_too_large"


def too_large() -> FileTooLarge:
    return FileTooLarge(f"The file is larger than this server accepts "
                        f"({settings.FILES_MAX_BYTES} bytes, FILES_MAX_BYTES).", param="file")


def file_create(tenant: Tenant, upload, data) -> dict:
    """Store `upload` (a Django UploadedFile or None) with the form fields `data`."""
    purpose = data.get("purpose")
    if not purpose:
        raise InvalidRequest("Missing required parameter: 'purpose'.", param="purpose",
                             code="missing_required_parameter")
    if purpose not in PURPOSES:
        raise InvalidRequest(f"'purpose' must be one of {', '.join(PURPOSES)}.",
                             param="purpose", code="invalid_value")
    if upload is None:
        raise InvalidRequest("Missing required parameter: 'file' (a multipart file part).",
                             param="file", code="missing_required_parameter")
    if upload.size > settings.FILES_MAX_BYTES:
        raise too_large()
    filename = (upload.name or "file").rsplit("/", 1)[-1][:MAX_FILENAME]
    if "\x00" in filename:
        raise InvalidRequest("The filename holds a NUL character.", param="file",
                             code="invalid_value")
    now = timezone.now()
    expires_at = _expires_at(data, now)
    file_id = "file-" + new_id("x")[2:]  # OpenAI's shape: `file-` and the random part
    storage_name = file_storage().save(f"{tenant.id}/{file_id}", upload)
    try:
        row = StoredFile.objects.create(
            id=file_id, tenant=tenant, filename=filename, purpose=purpose, bytes=upload.size,
            storage_name=storage_name, created_at=now, expires_at=expires_at)
    except BaseException:  # nothing stored half-way: no bytes without their row
        file_storage().delete(storage_name)
        raise
    return file_object(row)


def _expires_at(data, now):
    """`expires_after[anchor]=created_at`, `expires_after[seconds]` (3600 to 30 days)."""
    anchor = data.get("expires_after[anchor]")
    seconds = data.get("expires_after[seconds]")
    if anchor is None and seconds is None:
        return None
    if anchor != "created_at":
        raise InvalidRequest("'expires_after.anchor' must be 'created_at'.",
                             param="expires_after.anchor", code="invalid_value")
    try:
        seconds = int(seconds)
    except (TypeError, ValueError):
        seconds = 0
    if not 3600 <= seconds <= 30 * 24 * 3600:
        raise InvalidRequest("'expires_after.seconds' must be an integer from 3600 to 2592000.",
                             param="expires_after.seconds", code="invalid_value")
    return now + timedelta(seconds=seconds)


def file_delete(tenant: Tenant, file_id: str) -> dict:
    """Delete the file (and its place in every vector store); its bytes once committed."""
    with transaction.atomic():
        # locked first: an attach to a vector store right now commits before (its place is
        # then deleted with the file) or waits and finds the file gone (its 404)
        row = file_row(tenant, file_id, lock=True)
        # and its places, as an ingestion storing chunks locks its own: one committing
        # meanwhile has its chunks deleted too (not left referencing a deleted place)
        row.stores.lock_in_order()
        storage_name = row.storage_name
        row.delete()
        transaction.on_commit(lambda: file_storage().delete(storage_name))
    return {"id": file_id, "object": "file", "deleted": True}
