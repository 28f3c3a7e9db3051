"""Two writes on one object at once, in-process on the real database, made deterministic:
the test runs the first write in a transaction it holds open, the second (an HTTP request
on its own thread and connection) is sent and waits on a lock the first holds, then the
first commits. The first wins intact; the second is the loser's 404 (not a 500 from an
UPDATE that met no row, or from a foreign key the first broke), or completes after it."""
import threading
from datetime import datetime, timezone

import pytest
from django.conf import settings
from django.db import connection, connections, transaction
from django.test import Client

from chat_completions.models import StoredChatCompletion
from conversations.models import Conversation
from files.models import StoredFile
from files.services import file_delete
from responses_app.auth import mint_api_key
from responses_app.models import Tenant
from vector_stores import ingestion
from vector_stores.chunking import Piece
from vector_stores.models import Chunk, FileBatch, VectorStore, VectorStoreFile
from vector_stores.services import batch_create, store_file_create

pytestmark = pytest.mark.django_db(transaction=True)
NOW = datetime(2026, 11, 28, tzinfo=timezone.utc)
LOCK_WAIT_POLLS = 2000  # the update reaches its lock wait long before (a bound, not a clock)


@pytest.fixture
def tenant():
    return Tenant.objects.create(name="alice")


def _waiting_on_a_lock() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                       " AND wait_event_type = 'Lock'")
        return cursor.fetchone()[0]


def update_while_deleted(tenant, path: str, body: dict, delete) -> tuple[int, dict]:
    return request_while_held(tenant, "post", path, body, delete)


def request_while_held(tenant, method: str, path: str, body: dict | None,
                       hold, then=lambda: None) -> tuple[int, dict]:
    """Send the request while `hold()` runs in a transaction that, once the request waits
    on a lock, runs `then()` and commits; the request's status and JSON."""
    key = mint_api_key(tenant)
    answer = {}

    def post():
        try:
            send = getattr(Client(raise_request_exception=False), method)
            reply = send(path, body, content_type="application/json",
                         HTTP_AUTHORIZATION=f"Bearer {key}")
            answer["reply"] = reply
        finally:
            connections.close_all()

    with transaction.atomic():
        hold()
        poster = threading.Thread(target=post)
        poster.start()
        for _ in range(LOCK_WAIT_POLLS):
            if _waiting_on_a_lock() or not poster.is_alive():
                break
            threading.Event().wait(0.005)
        assert _waiting_on_a_lock() == 1
        then()
    poster.join(30)
    reply = answer["reply"]
    return reply.status_code, reply.json()


def test_conversation_update_racing_its_delete_is_404(tenant):
    Conversation.objects.create(id="conv_race", tenant=tenant, metadata={}, created_at=NOW)
    status, body = update_while_deleted(
        tenant, "/v1/conversations/conv_race", {"metadata": {"k": "v"}},
        lambda: Conversation.objects.filter(id="conv_race").delete())
    assert (status, body) == (404, {"error": {
        "message": "Conversation with id 'conv_race' not found.",
        "type": "invalid_request_error", "param": None, "code": "not_found"}})
    assert not Conversation.objects.exists()


def test_chat_completion_update_racing_its_delete_is_404(tenant):
    StoredChatCompletion.objects.create(id="chatcmpl-race", tenant=tenant, model="m",
                                        created_at=NOW, completion={"id": "chatcmpl-race"})
    status, body = update_while_deleted(
        tenant, "/v1/chat/completions/chatcmpl-race", {"metadata": {"k": "v"}},
        lambda: StoredChatCompletion.objects.filter(id="chatcmpl-race").delete())
    assert (status, body) == (404, {"error": {
        "message": "No chat completion found with id 'chatcmpl-race'.",
        "type": "invalid_request_error", "param": None, "code": "not_found"}})
    assert not StoredChatCompletion.objects.exists()


def test_store_file_update_racing_its_detach_is_404(tenant):
    store = VectorStore.objects.create(id="vs_race", tenant=tenant, created_at=NOW,
                                       last_active_at=NOW)
    stored = StoredFile.objects.create(id="file-race", tenant=tenant, filename="a.txt",
                                       purpose="assistants", bytes=1, storage_name="x",
                                       created_at=NOW)
    VectorStoreFile.objects.create(store=store, file=stored, status="completed",
                                   created_at=NOW)
    status, body = update_while_deleted(
        tenant, "/v1/vector_stores/vs_race/files/file-race", {"attributes": {"k": "v"}},
        lambda: VectorStoreFile.objects.filter(store=store).delete())
    assert (status, body) == (404, {"error": {
        "message": "No file found with id 'file-race' in this vector store.",
        "type": "invalid_request_error", "param": None, "code": "not_found"}})
    assert not VectorStoreFile.objects.exists()


def _store_and_file(tenant):
    store = VectorStore.objects.create(id="vs_race", tenant=tenant, created_at=NOW,
                                       last_active_at=NOW)
    stored = StoredFile.objects.create(id="file-race", tenant=tenant, filename="a.txt",
                                       purpose="assistants", bytes=1,
                                       storage_name="missing/file-race", created_at=NOW)
    return store, stored


def test_attach_racing_the_files_delete_is_404(tenant):
    _store_and_file(tenant)
    status, body = request_while_held(
        tenant, "post", "/v1/vector_stores/vs_race/files", {"file_id": "file-race"},
        lambda: file_delete(tenant, "file-race"))
    assert (status, body) == (404, {"error": {
        "message": "No such File object: file-race", "type": "invalid_request_error",
        "param": "file_id", "code": "not_found"}})
    assert (StoredFile.objects.count(), VectorStoreFile.objects.count()) == (0, 0)


def test_file_delete_racing_its_attach_deletes_its_place_too(tenant):
    _store_and_file(tenant)
    status, body = request_while_held(
        tenant, "delete", "/v1/files/file-race", None,
        lambda: store_file_create(tenant, "vs_race", {"file_id": "file-race"}))
    assert (status, body) == (200, {"id": "file-race", "object": "file", "deleted": True})
    assert (StoredFile.objects.count(), VectorStoreFile.objects.count()) == (0, 0)


def test_store_delete_racing_a_batch_deletes_the_batch_too(tenant):
    _store_and_file(tenant)
    status, body = request_while_held(
        tenant, "delete", "/v1/vector_stores/vs_race", None,
        lambda: batch_create(tenant, "vs_race", {"file_ids": ["file-race"]}))
    assert (status, body) == (200, {"id": "vs_race", "object": "vector_store.deleted",
                                    "deleted": True})
    assert (VectorStore.objects.count(), FileBatch.objects.count(),
            VectorStoreFile.objects.count(), StoredFile.objects.count()) == (0, 0, 0, 1)


def test_file_delete_racing_its_ingestion_deletes_the_chunks_too(tenant):
    store, stored = _store_and_file(tenant)
    place = VectorStoreFile.objects.create(store=store, file=stored, created_at=NOW)
    vector = [1.0] + [0.0] * (settings.EMBEDDING_DIMENSIONS - 1)
    status, body = request_while_held(
        tenant, "delete", "/v1/files/file-race", None,
        lambda: ingestion._store(place, [Piece(text="deploys on tuesdays", tokens=3)],
                                 [vector]))
    assert (status, body) == (200, {"id": "file-race", "object": "file", "deleted": True})
    assert (StoredFile.objects.count(), VectorStoreFile.objects.count(),
            Chunk.objects.count()) == (0, 0, 0)


def test_store_delete_racing_an_ingestion_deletes_its_chunks_too(tenant):
    store, stored = _store_and_file(tenant)
    place = VectorStoreFile.objects.create(store=store, file=stored, created_at=NOW)
    vector = [1.0] + [0.0] * (settings.EMBEDDING_DIMENSIONS - 1)
    status, body = request_while_held(
        tenant, "delete", "/v1/vector_stores/vs_race", None,
        lambda: ingestion._store(place, [Piece(text="deploys on tuesdays", tokens=3)],
                                 [vector]))
    assert (status, body) == (200, {"id": "vs_race", "object": "vector_store.deleted",
                                    "deleted": True})
    assert (VectorStore.objects.count(), VectorStoreFile.objects.count(),
            Chunk.objects.count(), StoredFile.objects.count()) == (0, 0, 0, 1)


@pytest.mark.parametrize("path, deleted, left", [
    ("/v1/vector_stores/vs_race", {"id": "vs_race", "object": "vector_store.deleted",
                                   "deleted": True}, (0, 0, 0, 1)),
    ("/v1/vector_stores/vs_race/files/file-race", {
        "id": "file-race", "object": "vector_store.file.deleted", "deleted": True}, (1, 0, 0, 1)),
], ids=["store delete", "detach"])
def test_a_store_delete_or_detach_racing_a_file_delete_does_not_deadlock(tenant, path, deleted,
                                                                         left):
    """The file's delete has locked its place in the store (its first step after the file)
    when the store's delete (or the file's detach from the store) comes; it then deletes
    the place's chunks. The store's delete and the detach used to delete the chunks first
    and wait for the place: a deadlock (503)."""
    store, stored = _store_and_file(tenant)
    place = VectorStoreFile.objects.create(store=store, file=stored, created_at=NOW)
    vector = [1.0] + [0.0] * (settings.EMBEDDING_DIMENSIONS - 1)
    ingestion._store(place, [Piece(text="deploys on tuesdays", tokens=3)], [vector])
    status, body = request_while_held(
        tenant, "delete", path, None,
        lambda: list(VectorStoreFile.objects.select_for_update().filter(pk=place.pk)),
        then=lambda: Chunk.objects.filter(store_file=place).delete())
    assert (status, body) == (200, deleted)
    assert (VectorStore.objects.count(), VectorStoreFile.objects.count(),
            Chunk.objects.count(), StoredFile.objects.count()) == left
