"""The Files and Vector Stores APIs through the openai SDK against the production
deployment (Daphne, a Celery worker ingesting, Postgres with pgvector, Redis), with the
fake upstream's deterministic embeddings: upload, upload_and_poll, file batches, search
with filters, list paging, /v1/embeddings, tenancy and bad input. The SDK's own types are
the oracle for every shape."""
import openai
import pytest
from openai import OpenAI
from openai.types import CreateEmbeddingResponse, FileObject, VectorStore
from openai.types.vector_stores import VectorStoreFile, VectorStoreFileBatch

from tests.fake_upstream import FAKE_EMBEDDING_FAILURE, fake_embedding
from tests.stores_corpus import CORPUS

POLL_MS = 100


@pytest.fixture(scope="module")
def alice(production):
    return OpenAI(base_url=production.base_url, api_key=production.new_api_key("stores-alice"),
                  max_retries=0, timeout=30)


@pytest.fixture(scope="module")
def bob(production):
    return OpenAI(base_url=production.base_url, api_key=production.new_api_key("stores-bob"),
                  max_retries=0, timeout=30)


@pytest.fixture(scope="module")
def corpus_store(alice):
    """A store with the corpus: the first file by upload_and_poll, the rest as one batch."""
    store = alice.vector_stores.create(name="corpus", metadata={"team": "search"})
    name, data, attributes = CORPUS[0]
    first = alice.vector_stores.files.upload_and_poll(
        vector_store_id=store.id, file=(name, data), poll_interval_ms=POLL_MS)
    alice.vector_stores.files.update(first.id, vector_store_id=store.id, attributes=attributes)
    uploaded = [alice.files.create(file=(name, data), purpose="assistants")
                for name, data, _ in CORPUS[1:]]
    batch = alice.vector_stores.file_batches.create_and_poll(
        vector_store_id=store.id, poll_interval_ms=POLL_MS,
        files=[{"file_id": f.id, "attributes": attributes}
               for f, (_, _, attributes) in zip(uploaded, CORPUS[1:])])
    return store, first, uploaded, batch


def test_files_upload_list_page_retrieve_content_delete(alice):
    created = [alice.files.create(file=(f"page-{n}.txt", f"page {n}".encode()),
                                  purpose="user_data") for n in range(3)]
    assert all(isinstance(f, FileObject) for f in created)
    assert [(f.filename, f.bytes, f.purpose, f.status) for f in created] == [
        (f"page-{n}.txt", 6, "user_data", "processed") for n in range(3)]
    listed = [f.id for f in alice.files.list(purpose="user_data", limit=2)]  # auto-paging
    assert listed == [f.id for f in reversed(created)]
    first_page = alice.files.list(purpose="user_data", limit=2, order="asc")
    assert ([f.id for f in first_page.data], first_page.has_more) == (
        [created[0].id, created[1].id], True)
    assert alice.files.retrieve(created[1].id) == created[1]
    assert alice.files.content(created[2].id).read() == b"page 2"
    assert alice.files.delete(created[0].id).deleted is True
    with pytest.raises(openai.NotFoundError):
        alice.files.retrieve(created[0].id)
    assert [f.id for f in alice.files.list(purpose="user_data")] == [created[2].id,
                                                                     created[1].id]


def test_a_store_ingests_its_files_and_counts_them(alice, corpus_store):
    store, first, uploaded, batch = corpus_store
    assert isinstance(first, VectorStoreFile) and isinstance(batch, VectorStoreFileBatch)
    assert (first.status, first.last_error, first.vector_store_id) == ("completed", None,
                                                                       store.id)
    assert first.chunking_strategy.static.max_chunk_size_tokens == 800
    assert (batch.status, batch.file_counts.completed, batch.file_counts.total) == (
        "completed", 4, 4)
    in_batch = alice.vector_stores.file_batches.list_files(batch.id, vector_store_id=store.id,
                                                          order="asc")
    assert [f.id for f in in_batch] == [f.id for f in uploaded]
    again = alice.vector_stores.retrieve(store.id)
    assert isinstance(again, VectorStore)
    assert (again.status, again.file_counts.completed, again.file_counts.total,
            again.metadata) == ("completed", 5, 5, {"team": "search"})
    assert again.usage_bytes == 44 + 61 + 38 + 69 + 47  # the chunks' UTF-8 bytes
    content = alice.vector_stores.files.content(first.id, vector_store_id=store.id)
    assert [part.text for part in content] == [CORPUS[0][1].decode()]


def test_search_with_filters_ranks_exactly(alice, corpus_store):
    store = corpus_store[0]
    page = alice.vector_stores.search(store.id, query="brown butter", max_num_results=3)
    assert [(r.filename, r.score) for r in page] == [("sauce.json", 1.0), ("fox.txt", 0.983871)]
    filtered = alice.vector_stores.search(
        store.id, query="brown fox pgvector butter search",
        filters={"type": "and", "filters": [{"type": "eq", "key": "kind", "value": "animal"},
                                            {"type": "gte", "key": "year", "value": 2021}]})
    assert [(r.filename, r.attributes) for r in filtered] == [
        ("foxes.md", {"kind": "animal", "year": 2023, "draft": True})]
    with pytest.raises(openai.BadRequestError) as caught:
        alice.vector_stores.search(store.id, query="x", filters={"type": "eq", "key": "kind"})
    assert caught.value.body == {
        "message": "'filters': a comparison filter has exactly 'type', 'key' and 'value'.",
        "type": "invalid_request_error", "param": None, "code": "invalid_value"}


def test_store_lists_page(alice):
    stores = [alice.vector_stores.create(name=f"paged-{n}") for n in range(3)]
    first = alice.vector_stores.list(limit=2, order="asc", after=stores[0].id)
    assert ([s.id for s in first.data], first.has_more) == ([stores[1].id, stores[2].id],
                                                            False)
    newest = alice.vector_stores.list(limit=1)
    assert [s.id for s in newest.data] == [stores[2].id]
    before = alice.vector_stores.list(limit=2, order="asc", before=stores[2].id)
    assert [s.id for s in before.data] == [stores[0].id, stores[1].id]
    for store in stores:
        assert alice.vector_stores.delete(store.id).deleted is True
    with pytest.raises(openai.NotFoundError):
        alice.vector_stores.retrieve(stores[0].id)


def test_another_tenant_reads_searches_and_attaches_nothing(alice, bob, corpus_store):
    store, first, uploaded, _ = corpus_store
    own = bob.vector_stores.create(name="bob's")
    for call in (lambda: bob.vector_stores.retrieve(store.id),
                 lambda: bob.vector_stores.search(store.id, query="fox"),
                 lambda: bob.vector_stores.files.list(store.id),
                 lambda: bob.vector_stores.files.retrieve(first.id, vector_store_id=store.id),
                 lambda: bob.vector_stores.files.create(own.id, file_id=first.id),
                 lambda: bob.vector_stores.file_batches.create(own.id, file_ids=[first.id]),
                 lambda: bob.vector_stores.delete(store.id),
                 lambda: bob.files.retrieve(first.id),
                 lambda: bob.files.content(first.id),
                 lambda: bob.files.delete(first.id)):
        with pytest.raises(openai.NotFoundError):
            call()
    assert bob.vector_stores.retrieve(own.id).file_counts.total == 0
    assert alice.files.retrieve(first.id).id == first.id


def test_a_bad_file_fails_alone_and_the_store_serves_the_rest(alice):
    store = alice.vector_stores.create(name="mixed")
    good = alice.files.create(file=CORPUS[3][:2], purpose="assistants")
    failing = alice.files.create(file=("boom.txt", f"one {FAKE_EMBEDDING_FAILURE}".encode()),
                                 purpose="assistants")
    broken = alice.files.create(file=("broken.pdf", b"%PDF-1.4 nothing"), purpose="assistants")
    batch = alice.vector_stores.file_batches.create_and_poll(
        vector_store_id=store.id, file_ids=[good.id, failing.id, broken.id],
        poll_interval_ms=POLL_MS)
    assert (batch.status, batch.file_counts.completed, batch.file_counts.failed) == (
        "completed", 1, 2)
    files = {f.id: f for f in alice.vector_stores.files.list(store.id)}
    assert (files[failing.id].status, files[failing.id].last_error.code,
            files[failing.id].last_error.message) == (
        "failed", "server_error",
        "The embedding upstream 'default' answered 500: embedding backend exploded")
    assert (files[broken.id].status, files[broken.id].last_error.code) == ("failed",
                                                                           "invalid_file")
    failed = alice.vector_stores.files.list(store.id, filter="failed", order="asc")
    assert [f.id for f in failed] == [failing.id, broken.id]
    assert [r.filename for r in alice.vector_stores.search(store.id, query="butter")] == [
        "sauce.json"]


def test_unknown_ids_are_404(alice):
    with pytest.raises(openai.NotFoundError) as caught:
        alice.vector_stores.search("vs_unknown", query="fox")
    assert caught.value.body["message"] == "No vector store found with id 'vs_unknown'."
    store = alice.vector_stores.create()
    with pytest.raises(openai.NotFoundError) as caught:
        alice.vector_stores.files.create(store.id, file_id="file-unknown")
    assert (caught.value.body["message"], caught.value.body["param"]) == (
        "No such File object: file-unknown", "file_id")
    with pytest.raises(openai.NotFoundError):
        alice.vector_stores.file_batches.create(store.id, file_ids=["file-unknown"])
    assert alice.vector_stores.retrieve(store.id).file_counts.total == 0  # nothing half-way
    assert [b for b in alice.vector_stores.files.list(store.id)] == []


def test_embeddings_for_tenants(alice, upstream):
    answer = alice.embeddings.create(model="text-embedding-3-small", input=["red fox", "db"])
    assert isinstance(answer, CreateEmbeddingResponse)
    assert [e.embedding for e in answer.data] == [fake_embedding("red fox"),
                                                  fake_embedding("db")]
    assert (answer.usage.prompt_tokens, answer.model) == (3, "text-embedding-3-small")
    with pytest.raises(openai.BadRequestError) as caught:
        alice.embeddings.create(model="text-embedding-3-small", input=[])
    assert caught.value.body["param"] == "input"
    usage = alice.get("/usage", cast_to=object)  # the tenant's daily usage: one request
    results = [result for bucket in usage["data"] for result in bucket["results"]]
    assert [(r["model"], r["num_model_requests"], r["input_tokens"]) for r in results] == [
        ("text-embedding-3-small", 1, 3)]
