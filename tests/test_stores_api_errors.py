"""Bad input to the Files and Vector Stores APIs: a clear OpenAI-shaped 4xx and nothing
stored half-way (no row, no bytes). Through Django's test client, on the real database."""
import json

import pytest
from django.conf import settings
from django.utils import timezone

from files.models import StoredFile
from responses_app.auth import mint_api_key
from responses_app.models import Tenant
from vector_stores.models import FileBatch, VectorStore, VectorStoreFile

pytestmark = pytest.mark.django_db


@pytest.fixture
def files_dir(settings, tmp_path):
    settings.STORAGES = {**settings.STORAGES,
                         "files": {"BACKEND": "django.core.files.storage.FileSystemStorage",
                                   "OPTIONS": {"location": str(tmp_path)}}}
    settings.FILES_MAX_BYTES = 1000
    return tmp_path


@pytest.fixture
def auth():
    return {"HTTP_AUTHORIZATION": f"Bearer {mint_api_key(Tenant.objects.create(name='a'))}"}


def assert_error(response, status, code, param, message=None):
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "param", "code"}
    assert (body["error"]["code"], body["error"]["param"]) == (code, param)
    if message is not None:
        assert body["error"]["message"] == message


def post_json(client, path, body, auth):
    return client.post(path, json.dumps(body), content_type="application/json", **auth)


def upload(client, auth, data: bytes, **fields):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return client.post("/v1/files", {"file": SimpleUploadedFile("a.txt", data), **fields},
                       **auth)


def nothing_stored(files_dir):
    assert StoredFile.objects.count() == 0
    assert [p for p in files_dir.rglob("*") if p.is_file()] == []


@pytest.mark.parametrize("size", [1001, 70_000])  # read and measured; refused by its length
def test_a_file_over_the_size_limit_is_413(client, auth, files_dir, size):
    response = upload(client, auth, b"x" * size, purpose="assistants")
    assert_error(response, 413, "file_too_large", "file",
                 "The file is larger than this server accepts (1000 bytes, FILES_MAX_BYTES).")
    nothing_stored(files_dir)


def test_an_upload_without_purpose_or_file_is_400(client, auth, files_dir):
    assert_error(upload(client, auth, b"words"), 400, "missing_required_parameter", "purpose")
    assert_error(upload(client, auth, b"words", purpose="memes"), 400, "invalid_value",
                 "purpose")
    assert_error(client.post("/v1/files", {"purpose": "assistants"}, **auth), 400,
                 "missing_required_parameter", "file")
    assert_error(post_json(client, "/v1/files", {"purpose": "assistants"}, auth), 400,
                 "unsupported_media_type", None)
    nothing_stored(files_dir)


def test_an_upload_is_stored_whole(client, auth, files_dir, django_capture_on_commit_callbacks):
    body = upload(client, auth, b"words", purpose="assistants").json()
    row = StoredFile.objects.get()
    assert body == {"id": row.id, "object": "file", "bytes": 5, "filename": "a.txt",
                    "created_at": int(row.created_at.timestamp()), "purpose": "assistants",
                    "status": "processed", "expires_at": None, "status_details": None}
    assert (files_dir / row.storage_name).read_bytes() == b"words"
    with django_capture_on_commit_callbacks(execute=True):  # the bytes go after the commit
        assert client.delete(f"/v1/files/{row.id}", **auth).json() == {
            "id": row.id, "object": "file", "deleted": True}
    nothing_stored(files_dir)


@pytest.mark.parametrize("body, status, code, param", [
    ({"chunking_strategy": {"type": "static", "static": {"max_chunk_size_tokens": 50,
                                                         "chunk_overlap_tokens": 0}}},
     400, "invalid_value", "chunking_strategy"),
    ({"expires_after": {"anchor": "created_at", "days": 3}}, 400, "invalid_value",
     "expires_after"),
    ({"metadata": {"k": 1}}, 400, "invalid_value", "metadata"),
    ({"file_ids": ["file-nope"]}, 404, "not_found", "file_ids"),
    ({"colour": "blue"}, 400, "unknown_parameter", "colour"),
])
def test_a_bad_store_creates_nothing(client, auth, files_dir, body, status, code, param):
    assert_error(post_json(client, "/v1/vector_stores", body, auth), status, code, param)
    assert VectorStore.objects.count() == 0


def test_bad_attributes_or_a_bad_batch_attach_nothing(client, auth, files_dir):
    file_id = upload(client, auth, b"words", purpose="assistants").json()["id"]
    store_id = post_json(client, "/v1/vector_stores", {}, auth).json()["id"]
    files_path = f"/v1/vector_stores/{store_id}/files"
    assert_error(post_json(client, files_path, {"file_id": file_id,
                                                "attributes": {"k": [1]}}, auth),
                 400, "invalid_value", "attributes")
    assert_error(post_json(client, f"/v1/vector_stores/{store_id}/file_batches",
                           {"file_ids": [file_id, "file-nope"]}, auth),
                 404, "not_found", "file_ids", "No such File object: file-nope")
    assert_error(post_json(client, f"/v1/vector_stores/{store_id}/file_batches",
                           {"files": [{"file_id": file_id, "attributes": "x"}]}, auth),
                 400, "invalid_value", "files[0].attributes")
    assert (VectorStoreFile.objects.count(), FileBatch.objects.count()) == (0, 0)


def test_embeddings_input_is_checked(client, auth):
    assert_error(post_json(client, "/v1/embeddings", {"input": "x"}, auth), 400,
                 "missing_required_parameter", "model")
    assert_error(post_json(client, "/v1/embeddings", {"model": "m", "input": [1, "a"]}, auth),
                 400, "invalid_value", "input")
    assert_error(post_json(client, "/v1/embeddings", {"model": "m", "input": "x",
                                                      "dimensions": 0}, auth),
                 400, "invalid_value", "dimensions")


def test_the_admin_lists_files_stores_their_files_and_chunks(admin_client, auth, files_dir):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from files.services import file_create
    from vector_stores.models import Chunk

    tenant = Tenant.objects.get(name="a")
    file_id = file_create(tenant, SimpleUploadedFile("notes.txt", b"words"),
                          {"purpose": "assistants"})["id"]
    store = VectorStore.objects.create(id="vs_admin", tenant=tenant, name="handbook",
                                       created_at=timezone.now(), last_active_at=timezone.now())
    row = VectorStoreFile.objects.create(store=store, file_id=file_id, status="failed",
                                         last_error={"code": "invalid_file", "message": "bad"},
                                         created_at=timezone.now())
    Chunk.objects.create(store=store, store_file=row, position=0, text="chunk text here",
                         tokens=3, embedding=[1.0] + [0.0] * (settings.EMBEDDING_DIMENSIONS - 1))
    pages = {"files/storedfile": "notes.txt", "vector_stores/vectorstore": "handbook",
             "vector_stores/vectorstorefile": "failed",
             "vector_stores/chunk": "chunk text here"}
    for model, text in pages.items():
        response = admin_client.get(f"/admin/{model}/")
        assert (response.status_code, text in response.content.decode()) == (200, True), model
    detail = admin_client.get(f"/admin/vector_stores/vectorstore/{store.id}/change/")
    assert (detail.status_code, "invalid_file" in detail.content.decode()) == (200, True)
