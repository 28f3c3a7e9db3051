"""Ingestion and search on the real database: pgvector's HNSW index and Postgres full text,
with the fake upstream's deterministic embeddings (a hashed bag of words), on a fixed
corpus. Exact rankings, exact filters, tenancy, bad input, and a failing file alone."""
import time

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection

from files.services import file_create
from responses_app.models import Tenant
from tests.fake_upstream import FAKE_EMBEDDING_FAILURE, fake_embedding
from tests.stores_corpus import CORPUS
from upstreams.routing import forget_routes
from vector_stores import services, side_reads
from vector_stores.ingestion import ingest
from vector_stores.models import Chunk, VectorStoreFile
from vector_stores.search import (InvalidSearchRequest, VectorStoreNotFound, check_search,
                                   search_stores)

pytestmark = pytest.mark.django_db


@pytest.fixture
def stores_settings(settings, upstream, tmp_path):
    settings.UPSTREAM_BASE_URL = upstream.base_url
    settings.UPSTREAM_MAX_RETRIES = 0
    settings.STORAGES = {**settings.STORAGES,
                         "files": {"BACKEND": "django.core.files.storage.FileSystemStorage",
                                   "OPTIONS": {"location": str(tmp_path)}}}
    forget_routes()
    yield settings
    forget_routes()


def upload(tenant, name, data):
    return file_create(tenant, SimpleUploadedFile(name, data), {"purpose": "assistants"})["id"]


def ingested_store(tenant, corpus=CORPUS):
    """A store holding the corpus, each file ingested (the task's work, on this thread)."""
    store = services.store_create(tenant, {"name": "corpus"})
    for name, data, attributes in corpus:
        file_id = upload(tenant, name, data)
        services.store_file_create(tenant, store["id"], {"file_id": file_id,
                                                         "attributes": attributes})
    for row in VectorStoreFile.objects.filter(store_id=store["id"]).order_by("pk"):
        ingest(row.pk)
    # with committed rows (transactional tests) the service's embedded ingestion threads
    # may have claimed a file first: ingest() then returns at once, the file in progress
    deadline = time.monotonic() + 30
    while VectorStoreFile.objects.filter(store_id=store["id"], status="in_progress").exists():
        assert time.monotonic() < deadline, "a file's ingestion did not end"
        time.sleep(0.01)
    return store["id"]


def names(results):
    return [result.filename for result in results]


@pytest.fixture
def alice(stores_settings):
    return Tenant.objects.create(name="alice")


def test_every_file_of_the_corpus_is_ingested_into_one_chunk(alice):
    store_id = ingested_store(alice)
    rows = VectorStoreFile.objects.filter(store_id=store_id).order_by("pk")
    assert [(row.file.filename, row.status, row.last_error) for row in rows] == [
        (name, "completed", None) for name, _, _ in CORPUS]
    texts = list(Chunk.objects.filter(store_id=store_id).order_by("store_file", "position")
                 .values_list("text", flat=True))
    assert texts == [
        "The quick brown fox jumps over the lazy dog.",
        "# Foxes\n\nA fox is a small omnivore. Foxes hunt mice at night.",
        "Postgres stores vectors with pgvector.",
        '{"dish": "brown butter sauce", "note": "cook the butter until brown"}',
        "Hybrid search fuses vector ranks and text ranks",
    ]
    assert [row.usage_bytes for row in rows] == [len(text.encode()) for text in texts]


EVERY_FILE = "brown fox pgvector butter search"  # a word of each file (foxes.md: stemmed)


def test_hybrid_search_ranks_the_corpus_exactly(alice):
    store_id = ingested_store(alice)
    results = search_stores(alice.id, [store_id], "brown butter", max_num_results=3)
    # first in both rankings, then second in both; no other file shares a word
    assert [(r.filename, r.score) for r in results] == [("sauce.json", 1.0),
                                                        ("fox.txt", 0.983871)]  # 61/62
    assert results[0].attributes == {"kind": "food", "year": 2021}
    assert results[0].content == [{"type": "text", "text": CORPUS[3][1].decode()}]
    # by vector: sauce, fox, pgvector, search, foxes; by text: sauce, fox, foxes, pgvector,
    # search: foxes.md passes search.pdf on its full-text rank
    assert [(r.filename, r.score) for r in search_stores(alice.id, [store_id], EVERY_FILE)] == [
        ("sauce.json", 1.0), ("fox.txt", 0.983871), ("pgvector.html", 0.960689),
        ("foxes.md", 0.953358), ("search.pdf", 0.945793)]
    # full text alone finds fox.txt (the stem "fox"), the vectors do not ("foxes" != "fox")
    assert [(r.filename, r.score) for r in search_stores(
        alice.id, [store_id], "foxes hunting at night")] == [("foxes.md", 1.0),
                                                              ("fox.txt", 0.491935)]
    assert names(search_stores(alice.id, [store_id], "pgvector stores vectors",
                               max_num_results=2)) == ["pgvector.html", "search.pdf"]


def test_the_vector_ranking_runs_on_the_hnsw_index(alice, settings):
    store_id = ingested_store(alice)
    settings.VECTOR_SEARCH_EXACT_MAX_CHUNKS = 0  # the index's path even for five chunks
    with connection.cursor() as cursor:  # a tiny table is sorted, not searched, unless
        cursor.execute("SET LOCAL enable_sort = off")  # sorting costs too much
    from vector_stores.ranking import index_scan
    query = index_scan(fake_embedding("brown butter"), 60)  # the index's query of the ranking
    assert "Index Scan using vector_store_chunks_hnsw" in query.explain()
    results = search_stores(alice.id, [store_id], "brown butter",
                            ranking_options={"ranker": "none"})
    assert [(r.filename, r.score) for r in results] == [("sauce.json", 0.755929),
                                                        ("fox.txt", 0.213201)]


def test_ranker_none_scores_by_cosine_similarity_and_the_threshold_cuts(alice):
    store_id = ingested_store(alice)
    results = search_stores(alice.id, [store_id], "brown butter", max_num_results=2,
                            ranking_options={"ranker": "none"})
    assert names(results) == ["sauce.json", "fox.txt"]
    assert [result.score for result in results] == [0.755929, 0.213201]  # 4/sqrt(28), 1/sqrt(22)
    assert names(search_stores(alice.id, [store_id], "brown butter",
                               ranking_options={"ranker": "auto", "score_threshold": 0.9})) \
        == ["sauce.json", "fox.txt"]


@pytest.mark.parametrize("filters, expected", [
    ({"type": "eq", "key": "kind", "value": "animal"}, ["fox.txt", "foxes.md"]),
    ({"type": "ne", "key": "kind", "value": "animal"},
     ["sauce.json", "pgvector.html", "search.pdf"]),
    ({"type": "gte", "key": "year", "value": 2023}, ["pgvector.html", "foxes.md", "search.pdf"]),
    ({"type": "lt", "key": "year", "value": 2021.5}, ["sauce.json", "fox.txt"]),
    ({"type": "in", "key": "kind", "value": ["food", "database"]},
     ["sauce.json", "pgvector.html", "search.pdf"]),
    ({"type": "nin", "key": "year", "value": [2020, 2021, 2024]}, ["foxes.md", "search.pdf"]),
    ({"type": "eq", "key": "draft", "value": True}, ["foxes.md"]),
    ({"type": "eq", "key": "year", "value": "2020"}, []),
    ({"type": "and", "filters": [{"type": "eq", "key": "kind", "value": "database"},
                                 {"type": "gt", "key": "year", "value": 2024}]},
     ["search.pdf"]),
    ({"type": "or", "filters": [{"type": "eq", "key": "kind", "value": "food"},
                                {"type": "and", "filters": [
                                    {"type": "eq", "key": "kind", "value": "animal"},
                                    {"type": "lte", "key": "year", "value": 2020}]}]},
     ["sauce.json", "fox.txt"]),
])
def test_attribute_filters(alice, filters, expected):
    store_id = ingested_store(alice)
    assert names(search_stores(alice.id, [store_id], EVERY_FILE, filters=filters)) == expected


@pytest.mark.parametrize("kwargs, message", [
    ({"filters": {"type": "eq", "key": "kind"}},
     "'filters': a comparison filter has exactly 'type', 'key' and 'value'."),
    ({"filters": {"type": "like", "key": "kind", "value": "a"}},
     "'filters.type' must be one of eq, ne, gt, gte, lt, lte, in, nin, and, or; got 'like'."),
    ({"filters": {"type": "and", "filters": [{"type": "in", "key": "k", "value": "a"}]}},
     "'filters.filters[0].value' must be a non-empty array of strings and numbers for 'in'."),
    ({"filters": {"type": "gt", "key": "draft", "value": True}},
     "'filters.value': 'gt' compares numbers or strings, not booleans."),
    ({"filters": ["eq"]}, "'filters' must be an object (a comparison or a compound filter)."),
    ({"max_num_results": 51}, "'max_num_results' must be an integer from 1 to 50."),
    ({"ranking_options": {"ranker": "best"}},
     "'ranking_options.ranker' must be one of auto, default-2024-11-15, none."),
    ({"ranking_options": {"score_threshold": 2}},
     "'ranking_options.score_threshold' must be a number from 0 to 1."),
])
def test_a_search_of_the_wrong_shape_is_refused_before_anything_runs(alice, upstream, kwargs,
                                                                     message):
    store_id = services.store_create(alice, {})["id"]
    upstream.clear()
    with pytest.raises(InvalidSearchRequest) as caught:
        search_stores(alice.id, [store_id], "anything", **kwargs)
    assert str(caught.value) == message
    assert upstream.requests() == []


def test_another_tenants_store_is_not_found(alice, upstream):
    store_id = ingested_store(alice)
    bob = Tenant.objects.create(name="bob")
    own = services.store_create(bob, {})["id"]
    upstream.clear()
    with pytest.raises(VectorStoreNotFound) as caught:  # checked alone, before any call
        check_search(bob.id, [own, store_id], filters={"type": "eq", "key": "k", "value": 1})
    assert (caught.value.store_id, upstream.requests()) == (store_id, [])
    check_search(bob.id, [own], max_num_results=50)
    with pytest.raises(VectorStoreNotFound) as caught:
        search_stores(bob.id, [own, store_id], "fox")
    assert caught.value.store_id == store_id
    with pytest.raises(VectorStoreNotFound) as caught:
        search_stores(alice.id, [store_id, "vs_unknown"], "fox")
    assert caught.value.store_id == "vs_unknown"


def test_a_failing_embedding_fails_its_file_alone(alice, upstream):
    corpus = [CORPUS[0], ("bad.txt", f"fine words then {FAKE_EMBEDDING_FAILURE}".encode(), {}),
              ("broken.pdf", b"%PDF-1.4 truncated", {}), CORPUS[3]]
    store_id = ingested_store(alice, corpus)
    rows = VectorStoreFile.objects.filter(store_id=store_id).order_by("pk")
    assert [(row.file.filename, row.status) for row in rows] == [
        ("fox.txt", "completed"), ("bad.txt", "failed"), ("broken.pdf", "failed"),
        ("sauce.json", "completed")]
    assert rows[1].last_error == {
        "code": "server_error",
        "message": "The embedding upstream 'default' answered 500: embedding backend exploded"}
    assert rows[2].last_error["code"] == "invalid_file"
    assert Chunk.objects.filter(store_file__in=[rows[1], rows[2]]).count() == 0
    assert names(search_stores(alice.id, [store_id], "brown butter")) == ["sauce.json",
                                                                         "fox.txt"]


def test_a_second_ingestion_of_a_file_is_skipped(alice):
    store_id = ingested_store(alice, CORPUS[:1])
    row = VectorStoreFile.objects.get(store_id=store_id)
    assert ingest(row.pk) == "skipped"
    assert Chunk.objects.filter(store_id=store_id).count() == 1


def test_a_lapsed_claim_is_taken_over_and_a_stalled_file_found(alice, settings):
    from datetime import timedelta

    from django.utils import timezone

    from vector_stores.ingestion import claim, stalled_files

    store_id = services.store_create(alice, {})["id"]
    file_id = upload(alice, "late.txt", b"late words")
    services.store_file_create(alice, store_id, {"file_id": file_id})
    row = VectorStoreFile.objects.get(store_id=store_id)
    assert (claim(row.pk), claim(row.pk)) == (True, False)
    assert stalled_files() == []
    lapsed = timezone.now() - timedelta(seconds=settings.INGESTION_CLAIM_SECONDS + 1)
    VectorStoreFile.objects.filter(pk=row.pk).update(claimed_at=lapsed)
    assert stalled_files() == [row.pk]
    assert ingest(row.pk) == "completed"
    assert stalled_files() == []


def test_a_cancelled_batch_ingests_nothing(alice):
    store_id = services.store_create(alice, {})["id"]
    file_ids = [upload(alice, f"{n}.txt", b"some words") for n in range(2)]
    batch = services.batch_create(alice, store_id, {"file_ids": file_ids})
    assert (batch["status"], batch["file_counts"]["in_progress"]) == ("in_progress", 2)
    cancelled = services.batch_cancel(alice, store_id, batch["id"])
    assert (cancelled["status"], cancelled["file_counts"]["cancelled"]) == ("cancelled", 2)
    rows = VectorStoreFile.objects.filter(store_id=store_id)
    assert [ingest(row.pk) for row in rows] == ["skipped", "skipped"]
    assert Chunk.objects.filter(store_id=store_id).count() == 0


def test_a_store_expires_after_its_days_without_a_search(alice):
    from datetime import timedelta

    from django.utils import timezone

    from vector_stores.models import VectorStore
    from vector_stores.selectors import store_get

    store_id = services.store_create(alice, {"expires_after": {"anchor": "last_active_at",
                                                                "days": 2}})["id"]
    VectorStore.objects.filter(id=store_id).update(
        last_active_at=timezone.now() - timedelta(days=2, seconds=1))
    store = store_get(alice, store_id)
    assert (store["status"], store["expires_after"]) == (
        "expired", {"anchor": "last_active_at", "days": 2})
    renamed = services.store_update(alice, store_id, {"name": "kept", "expires_after": None})
    assert (renamed["name"], renamed["status"], renamed["expires_at"]) == ("kept", "completed",
                                                                           None)


AT_ONCE_SEARCHES = [  # (query, kwargs, the ranking in both ways)
    ("brown butter", {"max_num_results": 3}, [("sauce.json", 1.0), ("fox.txt", 0.983871)]),
    (EVERY_FILE, {}, [("sauce.json", 1.0), ("fox.txt", 0.983871), ("pgvector.html", 0.960689),
                      ("foxes.md", 0.953358), ("search.pdf", 0.945793)]),
    ("foxes hunting at night", {}, [("foxes.md", 1.0), ("fox.txt", 0.491935)]),
    (EVERY_FILE, {"filters": {"type": "eq", "key": "kind", "value": "animal"}},
     [("fox.txt", 1.0), ("foxes.md", 0.983871)]),
    (EVERY_FILE, {"filters": {"type": "and", "filters": [
        {"type": "eq", "key": "kind", "value": "database"},
        {"type": "gt", "key": "year", "value": 2024}]}}, [("search.pdf", 1.0)]),
    ("the of and", {}, [("fox.txt", 0.5), ("search.pdf", 0.491935),  # no lexeme:
                        ("sauce.json", 0.484127)]),  # the vector ranking alone
]


def rankings(tenant, store_id, searches):
    return [[(r.filename, r.score) for r in search_stores(tenant.id, [store_id], query,
                                                          **kwargs)]
            for query, kwargs, _ in searches]


@pytest.mark.django_db(transaction=True)  # committed rows: a second connection sees them
# (the text ranking is taken by a side thread while the query is embedded, an HTTP call to
# the fake upstream; were it not taken by then, its caller would run it: the same rows)
@pytest.mark.parametrize("exact_max, signs_max", [  # the exact scan, the HNSW index's path,
    (10_000, 30_000), (0, 0), (0, 30_000)])  # a filter's chunks pre-ranked on sign bits
def test_the_rankings_at_once_rank_exactly_as_in_turn(stores_settings, exact_max, signs_max):
    alice = Tenant.objects.create(name="alice")
    store_id = ingested_store(alice)
    stores_settings.VECTOR_SEARCH_EXACT_MAX_CHUNKS = exact_max
    stores_settings.VECTOR_SEARCH_SIGNS_MAX_CHUNKS = signs_max
    assert (stores_settings.VECTOR_SEARCH_SIDE_THREADS, side_reads.available()) == (4, True)
    at_once = rankings(alice, store_id, AT_ONCE_SEARCHES)
    stores_settings.VECTOR_SEARCH_SIDE_THREADS = 0
    assert side_reads.available() is False
    in_turn = rankings(alice, store_id, AT_ONCE_SEARCHES)
    assert at_once == in_turn == [expected for _, _, expected in AT_ONCE_SEARCHES]


def test_inside_a_transaction_the_rankings_run_in_turn(alice):
    store_id = ingested_store(alice)  # uncommitted: pytest's test transaction
    assert (connection.in_atomic_block, side_reads.available()) == (True, False)
    assert rankings(alice, store_id, AT_ONCE_SEARCHES) == [
        expected for _, _, expected in AT_ONCE_SEARCHES]
