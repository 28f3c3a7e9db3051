"""Writes of the Vector Stores API: stores, attaching files (alone or in batches), their
attributes, cancelling batches, deleting. Every request is checked whole before anything
is written, and each write is one transaction: a bad file id or attribute stores nothing.
Attached files are ingested after the commit (dispatch.py)."""
from django.db import transaction
from django.utils import timezone

from files.models import StoredFile
from files.selectors import file_not_found
from responses_app.errors import InvalidRequest
from responses_app.ids import new_id
from responses_app.models import Tenant

from . import selectors
from .chunking import InvalidChunkingStrategy, strategy_of
from .dispatch import ingest_after_commit
from .models import FileBatch, VectorStore, VectorStoreFile

MAX_ATTRIBUTES = 16
MAX_KEY = 64
MAX_STRING_VALUE = 512
MAX_FILES_PER_REQUEST = 2000
STORE_FIELDS = {"name", "description", "expires_after", "file_ids", "metadata",
                "chunking_strategy"}


def _object(data, fields: set[str]) -> dict:
    if not isinstance(data, dict):
        raise InvalidRequest("The body must be a JSON object.", code="invalid_type")
    unknown = sorted(set(data) - fields)
    if unknown:
        raise InvalidRequest(f"Unknown parameter: '{unknown[0]}'.", param=unknown[0],
                             code="unknown_parameter")
    return data


def _string(data: dict, name: str, maximum: int = 512) -> str | None:
    value = data.get(name)
    if value is not None and (not isinstance(value, str) or len(value) > maximum):
        raise InvalidRequest(f"'{name}' must be a string of at most {maximum} characters.",
                             param=name, code="invalid_value")
    return value


def _metadata(value, param: str = "metadata") -> dict:
    if value is None:
        return {}
    if (not isinstance(value, dict) or len(value) > MAX_ATTRIBUTES
            or not all(isinstance(k, str) and len(k) <= MAX_KEY and isinstance(v, str)
                       and len(v) <= MAX_STRING_VALUE for k, v in value.items())):
        raise InvalidRequest(f"'{param}' must be an object of at most {MAX_ATTRIBUTES} string "
                             f"values (keys up to {MAX_KEY} characters, values up to "
                             f"{MAX_STRING_VALUE}).", param=param, code="invalid_value")
    return value


def attributes_of(value, param: str = "attributes") -> dict:
    if value is None:
        return {}
    if (not isinstance(value, dict) or len(value) > MAX_ATTRIBUTES
            or not all(isinstance(k, str) and 0 < len(k) <= MAX_KEY
                       and (isinstance(v, bool | int | float)
                            or isinstance(v, str) and len(v) <= MAX_STRING_VALUE)
                       for k, v in value.items())):
        raise InvalidRequest(f"'{param}' must be an object of at most {MAX_ATTRIBUTES} "
                             f"strings (up to {MAX_STRING_VALUE} characters), numbers or "
                             f"booleans, keys up to {MAX_KEY} characters.", param=param,
                             code="invalid_value")
    return value


def _chunking(value, param: str = "chunking_strategy") -> dict:
    try:
        return strategy_of(value)
    except InvalidChunkingStrategy as exc:
        raise InvalidRequest(str(exc), param=param, code="invalid_value")


def _expires_after_days(value) -> int | None:
    if value is None:
        return None
    if (not isinstance(value, dict) or set(value) != {"anchor", "days"}
            or value["anchor"] != "last_active_at" or type(value["days"]) is not int
            or not 1 <= value["days"] <= 365):
        raise InvalidRequest("'expires_after' must be {\"anchor\": \"last_active_at\", "
                             "\"days\": 1-365}.", param="expires_after", code="invalid_value")
    return value["days"]


def _tenant_files(tenant: Tenant, file_ids, param: str) -> list[StoredFile]:
    if (not isinstance(file_ids, list) or len(file_ids) > MAX_FILES_PER_REQUEST
            or not all(isinstance(file_id, str) for file_id in file_ids)):
        raise InvalidRequest(f"'{param}' must be an array of at most {MAX_FILES_PER_REQUEST} "
                             "file ids.", param=param, code="invalid_value")
    # locked (in one order) until the attach commits: a file deleted meanwhile is a 404
    # here, and a delete that comes later waits and deletes its place in the store too
    rows = (StoredFile.objects.filter(tenant=tenant, id__in=file_ids).order_by("id")
            .select_for_update(no_key=True))
    found = {row.id: row for row in rows}
    for file_id in file_ids:
        if file_id not in found:
            raise file_not_found(file_id, param)
    return [found[file_id] for file_id in dict.fromkeys(file_ids)]


def _attach(store: VectorStore, files: list[tuple[StoredFile, dict, dict]],
            batch: FileBatch | None = None) -> list[VectorStoreFile]:
    """Attach (file, attributes, strategy) triples; a file already attached keeps its row
    (and joins the batch). Ingestion starts after the commit."""
    now = timezone.now()
    existing = {row.file_id: row for row in VectorStoreFile.objects.filter(
        store=store, file_id__in=[f.id for f, _, _ in files])}
    rows, new = [], []
    for stored_file, attributes, strategy in files:
        row = existing.get(stored_file.id)
        if row is None:
            row = VectorStoreFile(store=store, file=stored_file, batch=batch,
                                  attributes=attributes, chunking_strategy=strategy,
                                  created_at=now)
            new.append(row)
        elif batch is not None:
            row.batch = batch
            row.save(update_fields=["batch"])
        rows.append(row)
    VectorStoreFile.objects.bulk_create(new)
    ingest_after_commit([row.pk for row in new])
    return rows


def store_create(tenant: Tenant, data) -> dict:
    data = _object(data, STORE_FIELDS)
    name = _string(data, "name") or ""
    description = _string(data, "description", 4096) or ""
    metadata = _metadata(data.get("metadata"))
    days = _expires_after_days(data.get("expires_after"))
    strategy = _chunking(data.get("chunking_strategy"))
    now = timezone.now()
    with transaction.atomic():
        files = _tenant_files(tenant, data.get("file_ids") or [], "file_ids")
        store = VectorStore.objects.create(
            id=new_id("vs"), tenant=tenant, name=name, description=description,
            metadata=metadata, created_at=now, last_active_at=now, expires_after_days=days,
            chunking_strategy=strategy)
        _attach(store, [(f, {}, strategy) for f in files])
    return selectors.store_get(tenant, store.id)


def store_update(tenant: Tenant, store_id: str, data) -> dict:
    data = _object(data, {"name", "expires_after", "metadata"})
    with transaction.atomic():
        store = selectors.store_row(tenant, store_id, lock=True)
        if "name" in data:
            store.name = _string(data, "name") or ""
        if "metadata" in data:
            store.metadata = _metadata(data["metadata"])
        if "expires_after" in data:
            store.expires_after_days = _expires_after_days(data["expires_after"])
        store.save()
    return selectors.store_get(tenant, store_id)


def store_delete(tenant: Tenant, store_id: str) -> dict:
    with transaction.atomic():
        # locked first, as attaches lock it: one committing meanwhile has its rows deleted
        # with the store, one waiting finds the store gone (its 404)
        store = selectors.store_row(tenant, store_id, lock=True)
        # then its files' places, before any of their chunks, as a file's delete and an
        # ingestion lock a place: none of them then waits for the other holding a chunk
        store.files.lock_in_order()
        store.delete()
    return {"id": store_id, "object": "vector_store.deleted", "deleted": True}


def store_file_create(tenant: Tenant, store_id: str, data) -> dict:
    data = _object(data, {"file_id", "attributes", "chunking_strategy"})
    file_id = data.get("file_id")
    if not isinstance(file_id, str):
        raise InvalidRequest("Missing required parameter: 'file_id'.", param="file_id",
                             code="missing_required_parameter")
    attributes = attributes_of(data.get("attributes"))
    strategy = _chunking(data.get("chunking_strategy"))
    with transaction.atomic():
        store = selectors.store_row(tenant, store_id, lock=True)
        [stored_file] = _tenant_files(tenant, [file_id], "file_id")
        [row] = _attach(store, [(stored_file, attributes, strategy)])
    return selectors.store_file_object(row)


def store_file_update(tenant: Tenant, store_id: str, file_id: str, data) -> dict:
    data = _object(data, {"attributes"})
    attributes = attributes_of(data.get("attributes"))
    with transaction.atomic():
        # locked: a detach committed meanwhile makes it a 404, not an update of no row
        row = selectors.store_file_row(tenant, store_id, file_id, lock=True)
        row.attributes = attributes
        row.save(update_fields=["attributes"])
    return selectors.store_file_object(row)


def store_file_delete(tenant: Tenant, store_id: str, file_id: str) -> dict:
    with transaction.atomic():
        # the place locked before its chunks are deleted, as every other delete locks it
        selectors.store_file_row(tenant, store_id, file_id, lock=True).delete()
    return {"id": file_id, "object": "vector_store.file.deleted", "deleted": True}


def batch_create(tenant: Tenant, store_id: str, data) -> dict:
    data = _object(data, {"file_ids", "files", "attributes", "chunking_strategy"})
    if ("file_ids" in data) == ("files" in data):
        raise InvalidRequest("Give exactly one of 'file_ids' and 'files'.", param="file_ids",
                             code="invalid_value")
    attributes = attributes_of(data.get("attributes"))
    strategy = _chunking(data.get("chunking_strategy"))
    if "file_ids" in data:
        wanted = [(file_id, attributes, strategy) for file_id in data["file_ids"]] \
            if isinstance(data["file_ids"], list) else data["file_ids"]
        param = "file_ids"
    else:
        wanted, param = _batch_files(data["files"], attributes, strategy), "files"
    if isinstance(wanted, list) and not wanted:
        raise InvalidRequest(f"'{param}' must not be empty.", param=param, code="invalid_value")
    ids = [entry[0] for entry in wanted] if isinstance(wanted, list) else wanted
    with transaction.atomic():
        store = selectors.store_row(tenant, store_id, lock=True)
        files = {f.id: f for f in _tenant_files(tenant, ids, param)}
        batch = FileBatch.objects.create(id=new_id("vsfb"), store=store,
                                         created_at=timezone.now())
        seen = set()
        triples = []
        for file_id, file_attributes, file_strategy in wanted:
            if file_id not in seen:
                seen.add(file_id)
                triples.append((files[file_id], file_attributes, file_strategy))
        _attach(store, triples, batch)
    return selectors.batch_get(tenant, store_id, batch.id)


def _batch_files(files, attributes: dict, strategy: dict) -> list[tuple[str, dict, dict]]:
    if not isinstance(files, list) or len(files) > MAX_FILES_PER_REQUEST:
        raise InvalidRequest(f"'files' must be an array of at most {MAX_FILES_PER_REQUEST} "
                             "objects.", param="files", code="invalid_value")
    wanted = []
    for index, entry in enumerate(files):
        where = f"files[{index}]"
        entry = _object(entry, {"file_id", "attributes", "chunking_strategy"})
        if not isinstance(entry.get("file_id"), str):
            raise InvalidRequest(f"'{where}.file_id' is required.", param=f"{where}.file_id",
                                 code="missing_required_parameter")
        wanted.append((entry["file_id"],
                       attributes_of(entry["attributes"], f"{where}.attributes")
                       if "attributes" in entry else attributes,
                       _chunking(entry["chunking_strategy"], f"{where}.chunking_strategy")
                       if "chunking_strategy" in entry else strategy))
    return wanted


def batch_cancel(tenant: Tenant, store_id: str, batch_id: str) -> dict:
    """Cancel the batch's files still in progress (a finished batch is returned unchanged)."""
    with transaction.atomic():
        batch = selectors.batch_row(tenant, store_id, batch_id)
        cancelled = VectorStoreFile.objects.filter(batch_id=batch.id, status="in_progress") \
            .update(status="cancelled", claimed_at=None)
        if cancelled:
            FileBatch.objects.filter(id=batch.id).update(cancelled=True)
    return selectors.batch_get(tenant, store_id, batch_id)
