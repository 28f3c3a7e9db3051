"""The upgrade's chunks without sign bits (vector_stores/sign_backfill.py): stored before
migration 0002 (simulated: their `signs` set NULL by SQL after ingestion), a filtered
search on the sign bits' path still ranks them exactly, as the exact search does; the
periodic task signs them in batches, the bits ingestion writes, and a second run changes
nothing; then the pre-ranking on the bits is what ranks them."""
import io

import psycopg
import pytest
from django.core.management import call_command
from django.db import connection

from tests.fake_upstream import fake_embedding
from tests.test_vector_sign_bits import FILTERED
from tests.test_vector_store_search import alice, ingested_store, stores_settings  # noqa: F401
from vector_stores import sign_bits as sign_bits_module
from vector_stores.models import Chunk
from vector_stores.search import search_stores
from vector_stores.sign_backfill import SIGN_BATCH, sign_batch, start_embedded_thread
from vector_stores.sign_bits import sign_bits
from vector_stores.statements import Statement, run_together
from vector_stores.tasks import sign_unsigned_chunks

pytestmark = pytest.mark.django_db


def rankings(tenant, store_id, settings, path, ranker="none"):
    """The FILTERED searches' results (filename, score) on `path`: "exact" or "signs"."""
    settings.VECTOR_SEARCH_EXACT_MAX_CHUNKS = 10_000 if path == "exact" else 0
    settings.VECTOR_SEARCH_SIGNS_MAX_CHUNKS = 30_000
    return [[(r.filename, r.score) for r in search_stores(
        tenant.id, [store_id], query, filters=filters, ranking_options={"ranker": ranker})]
        for query, filters in FILTERED]


def signs_by_pk(store_id):
    return dict(Chunk.objects.filter(store_id=store_id).values_list("pk", "signs"))


def test_unsigned_chunks_are_ranked_exactly_before_the_backfill(alice, settings,  # noqa: F811
                                                                monkeypatch):
    store_id = ingested_store(alice)
    exact = rankings(alice, store_id, settings, "exact")
    assert exact[0] == [("fox.txt", 0.26968), ("foxes.md", 0.111803)]
    assert Chunk.objects.filter(store_id=store_id).update(signs=None) == 5
    assert rankings(alice, store_id, settings, "signs") == exact
    # none pre-ranked at all: the unsigned chunks are re-ranked by themselves, not because
    # the pre-ranking's 10 x candidates happened to hold the corpus's 5 chunks
    monkeypatch.setattr(sign_bits_module, "RERANK_FACTOR", 0)
    assert rankings(alice, store_id, settings, "signs") == exact
    assert rankings(alice, store_id, settings, "signs", "auto") == \
        rankings(alice, store_id, settings, "exact", "auto")


def test_the_backfill_signs_in_batches_as_ingestion_does(alice):  # noqa: F811
    store_id = ingested_store(alice)
    texts = dict(Chunk.objects.filter(store_id=store_id).values_list("pk", "text"))
    ingested = signs_by_pk(store_id)
    assert ingested == {pk: sign_bits(fake_embedding(text)) for pk, text in texts.items()}
    # one chunk with negative, zero and tiny coordinates (the fake's are non-negative)
    first = min(texts)
    vector = [(-0.5, 0.0, 1e-9, -1e-9, 0.25, -0.0)[i % 6] for i in range(len(ingested[first]))]
    Chunk.objects.filter(pk=first).update(embedding=vector)
    ingested[first] = sign_bits(vector)
    assert ingested[first][:12] == "001010001010"
    Chunk.objects.filter(store_id=store_id).update(signs=None)
    order = list(Chunk.objects.filter(store_id=store_id)
                 .order_by("store_file_id", "pk").values_list("pk", flat=True))

    assert sign_batch(2) == 2
    assert signs_by_pk(store_id) == {pk: ingested[pk] if pk in order[:2] else None
                                     for pk in order}
    assert sign_batch(2) == 2
    assert sign_batch(2) == 1
    assert sign_batch(2) == 0
    assert signs_by_pk(store_id) == ingested
    assert sign_unsigned_chunks(batch_size=2) == 0  # the second run: nothing to do
    assert signs_by_pk(store_id) == ingested

    Chunk.objects.filter(store_id=store_id).update(signs=None)
    assert sign_unsigned_chunks(batch_size=2) == 5  # batches of 2, 2, 1: all, then stops
    assert signs_by_pk(store_id) == ingested
    assert sign_unsigned_chunks(batch_size=2) == 0
    assert signs_by_pk(store_id) == ingested


def test_after_the_backfill_the_bits_rank_as_before(alice, settings,  # noqa: F811
                                                   monkeypatch):
    store_id = ingested_store(alice)
    exact = rankings(alice, store_id, settings, "exact")
    Chunk.objects.filter(store_id=store_id).update(signs=None)
    assert sign_unsigned_chunks(batch_size=3) == 5
    assert rankings(alice, store_id, settings, "signs") == exact
    assert rankings(alice, store_id, settings, "signs", "auto") == \
        rankings(alice, store_id, settings, "exact", "auto")
    # the pre-ranking is what found them: none pre-ranked, none unsigned, nothing found
    monkeypatch.setattr(sign_bits_module, "RERANK_FACTOR", 0)
    assert rankings(alice, store_id, settings, "signs") == [[]] * len(FILTERED)


def test_a_batch_takes_the_unsigned_chunks_from_their_partial_index(alice):  # noqa: F811
    ingested_store(alice)
    with connection.cursor() as cursor:  # a tiny table is read whole unless told not to
        cursor.execute("SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off")
    plan = "\n".join(row[0] for row in run_together(
        Statement("EXPLAIN " + SIGN_BATCH, [1000]))[0])
    assert "Index Only Scan using vector_store_chunks_unsigned" in plan or \
        "Index Scan using vector_store_chunks_unsigned" in plan


def test_the_command_signs_them_all_at_once(alice):  # noqa: F811
    store_id = ingested_store(alice)
    ingested = signs_by_pk(store_id)
    Chunk.objects.filter(store_id=store_id).update(signs=None)
    out = io.StringIO()
    call_command("sign_chunks", "--batch-size", "2", stdout=out)
    assert out.getvalue() == "5 chunks signed\n"
    assert signs_by_pk(store_id) == ingested
    out = io.StringIO()
    call_command("sign_chunks", stdout=out)
    assert out.getvalue() == "0 chunks signed\n"


def test_beat_runs_the_backfill_every_minute(settings):
    assert settings.CELERY_BEAT_SCHEDULE["sign-unsigned-chunks"] == {
        "task": "vector_stores.sign_unsigned_chunks", "schedule": 60.0,
        "options": {"expires": 60.0}}
    assert sign_unsigned_chunks.name == "vector_stores.sign_unsigned_chunks"


def test_the_embedded_timer_is_off_at_0(settings):
    """The test process runs none (conftest: 0); the embedded mode's own run is
    test_e2e_embedded.test_embedded_signs_the_chunks_an_upgrade_left_unsigned."""
    assert settings.EMBEDDED_SIGN_INTERVAL_SECONDS == 0
    assert start_embedded_thread() is False


@pytest.mark.django_db(transaction=True)
def test_two_workers_at_once_sign_different_chunks(alice):  # noqa: F811
    store_id = ingested_store(alice)
    ingested = signs_by_pk(store_id)
    Chunk.objects.filter(store_id=store_id).update(signs=None)
    order = list(Chunk.objects.filter(store_id=store_id)
                 .order_by("store_file_id", "pk").values_list("pk", flat=True))
    other = psycopg.connect(**connection.get_connection_params())  # a second worker
    try:
        with other.cursor() as cursor:  # its batch of 2 signed, not committed: locked
            cursor.execute(SIGN_BATCH, [2])
            assert cursor.rowcount == 2
        with connection.cursor() as cursor:  # waiting for its locks fails, not hangs
            cursor.execute("SET lock_timeout = '10s'")
        assert sign_batch(10) == 3  # the 3 others; the locked 2 skipped
        assert signs_by_pk(store_id) == {pk: None if pk in order[:2] else ingested[pk]
                                         for pk in order}
        other.commit()
    finally:
        other.close()
        with connection.cursor() as cursor:
            cursor.execute("RESET lock_timeout")
    assert signs_by_pk(store_id) == ingested
    assert sign_batch(10) == 0
