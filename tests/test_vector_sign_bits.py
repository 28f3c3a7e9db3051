"""The vector ranking of a filter's chunks pre-ranked on sign bits (vector_stores/sign_bits.py):
the bits as ingestion writes them and as the backfill's SQL computes them, the
query's weighted pre-ranking terms, the path's choice by the scope's size, and its rankings
on the real database: with the corpus's few chunks every one is re-ranked exactly, so they
are the exact search's, score for score."""
import pytest
from django.db import connection

from tests.fake_upstream import fake_embedding
from tests.test_vector_store_search import alice, ingested_store, stores_settings  # noqa: F401
from vector_stores.models import Chunk, VectorStoreFile
from vector_stores.ranking import Scope, nearest_statement
from vector_stores.search import search_stores
from vector_stores.sign_backfill import SIGNS_SQL
from vector_stores.sign_bits import score_terms, sign_bits, signs_statement
from vector_stores.statements import Statement, run_together

pytestmark = pytest.mark.django_db

BACKFILL = f"UPDATE vector_store_chunks SET signs = {SIGNS_SQL.format(embedding='embedding')}"


def test_sign_bits_are_one_where_a_coordinate_is_positive():
    assert sign_bits([0.5, -0.25, 0.0, 1e-9, -0.0]) == "10010"


def test_the_querys_terms_weigh_its_coordinates_by_magnitude_and_sign():
    # levels round(2 |q| / 0.9): 2, 1 (0.67), 0, 1 (1.33), 2
    assert score_terms([0.9, -0.3, 0.0, 0.6, -0.9]) == [
        (2, "10000"), (-2, "00001"), (1, "00010"), (-1, "01000")]
    assert score_terms([0.0, 0.0]) == []
    assert score_terms([0.2, 0.0, 0.2]) == [(2, "101")]  # the fake's: one level


def test_the_statement_pre_ranks_on_the_bits_then_re_ranks_exactly():
    statement = signs_statement("{3,8}", [0.5, 0.0, -1.0], 40)  # levels 1, 0, 2
    assert statement == Statement(
        "WITH near AS MATERIALIZED ((SELECT id FROM vector_store_chunks "
        "WHERE store_file_id = ANY(%s::bigint[]) ORDER BY -2 * bit_count(signs & %s::bit "
        "varying) + 1 * bit_count(signs & %s::bit varying) DESC NULLS LAST, id LIMIT %s) "
        "UNION ALL (SELECT id FROM vector_store_chunks "
        "WHERE store_file_id = ANY(%s::bigint[]) AND signs IS NULL)) "
        "SELECT c.id, c.embedding <=> %s::vector AS distance FROM vector_store_chunks AS c "
        "WHERE c.id IN (SELECT id FROM near) AND (c.embedding <=> %s::vector) < %s "
        "ORDER BY distance, c.id LIMIT %s",
        ["{3,8}", "001", "100", 400, "{3,8}", "[0.5,0.0,-1.0]", "[0.5,0.0,-1.0]", 1.0, 40])


@pytest.mark.parametrize("scope, signs", [
    (Scope(["vs_1"], [3, 8], 20_000), True),
    (Scope(["vs_1"], [3, 8], 30_000), True),
    (Scope(["vs_1"], [3, 8], 30_001), False),  # the HNSW index's path
    (Scope(["vs_1"], None, 20_000), False),  # no filter: the index's path
    (Scope(["vs_1"], [3, 8], 10_000), None)])  # exact
def test_the_path_is_chosen_by_the_filters_chunk_count(settings, scope, signs):
    settings.VECTOR_SEARCH_EXACT_MAX_CHUNKS = 10_000
    settings.VECTOR_SEARCH_SIGNS_MAX_CHUNKS = 30_000
    statement = nearest_statement(scope, fake_embedding("brown fox"), 40,
                                  [(100_000.0, "0.8.6")])
    assert (None if statement is None else "bit_count" in statement.sql) is signs
    settings.VECTOR_SEARCH_SIGNS_MAX_CHUNKS = 0  # never
    statement = nearest_statement(scope, fake_embedding("brown fox"), 40,
                                  [(100_000.0, "0.8.6")])
    assert statement is None or "bit_count" not in statement.sql


def test_ingestion_writes_the_bits_and_the_backfill_computes_the_same(alice):  # noqa: F811
    store_id = ingested_store(alice)
    rows = list(Chunk.objects.filter(store_id=store_id).order_by("pk")
                .values_list("pk", "text", "signs"))
    assert len(rows) == 5
    for _, text, signs in rows:
        assert signs == sign_bits(fake_embedding(text))
    Chunk.objects.update(signs=None)
    with connection.cursor() as cursor:
        cursor.execute(BACKFILL)
    assert list(Chunk.objects.order_by("pk").values_list("pk", "text", "signs")) == rows


FILTERED = [  # (query, filters): a filter's chunks, every one re-ranked exactly
    ("brown fox pgvector butter search", {"type": "eq", "key": "kind", "value": "animal"}),
    ("brown fox pgvector butter search", {"type": "ne", "key": "kind", "value": "animal"}),
    ("brown butter", {"type": "lt", "key": "year", "value": 2021.5}),
    ("foxes hunting at night", {"type": "in", "key": "kind", "value": ["animal", "food"]}),
    ("the of and", {"type": "gte", "key": "year", "value": 2021}),
]


@pytest.mark.parametrize("ranker", ["none", "auto"])
def test_the_sign_bits_path_ranks_as_the_exact_search(alice, settings,  # noqa: F811
                                                      ranker):
    store_id = ingested_store(alice)
    options = {"ranker": ranker}
    settings.VECTOR_SEARCH_EXACT_MAX_CHUNKS = 10_000
    exact = [[(r.filename, r.score) for r in search_stores(
        alice.id, [store_id], query, filters=filters, ranking_options=options)]
        for query, filters in FILTERED]
    settings.VECTOR_SEARCH_EXACT_MAX_CHUNKS = 0
    settings.VECTOR_SEARCH_SIGNS_MAX_CHUNKS = 30_000
    signs = [[(r.filename, r.score) for r in search_stores(
        alice.id, [store_id], query, filters=filters, ranking_options=options)]
        for query, filters in FILTERED]
    assert signs == exact
    assert exact[0] == ([("fox.txt", 0.26968), ("foxes.md", 0.111803)] if ranker == "none"
                        else [("fox.txt", 1.0), ("foxes.md", 0.983871)])  # 2/sqrt(55), 1/sqrt(80)


def test_the_pre_ranking_reads_the_covering_index_alone(alice):  # noqa: F811
    store_id = ingested_store(alice)
    files = list(VectorStoreFile.objects.filter(store_id=store_id).values_list("pk", flat=True))
    statement = signs_statement("{" + ",".join(map(str, files)) + "}",
                                fake_embedding("brown fox"), 40)
    with connection.cursor() as cursor:  # a tiny table is read whole unless told not to
        cursor.execute("SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off")
        # as vacuumed (the rows uncommitted, VACUUM cannot mark them visible): otherwise
        # the index-only scan costs what the foreign key's index scan does, a tie either
        # side of which the planner took, by the tests run before in the same database
        cursor.execute("UPDATE pg_class SET relpages = pages, relallvisible = pages, "
                       "reltuples = (SELECT count(*) FROM vector_store_chunks) FROM (SELECT "
                       "greatest(1, pg_relation_size('vector_store_chunks') / 8192) AS pages) "
                       "AS size WHERE relname = 'vector_store_chunks'")
    plan = "\n".join(row[0] for row in run_together(
        Statement("EXPLAIN " + statement.sql, statement.params))[0])
    assert "Index Only Scan using vector_store_chunks_signs" in plan
    assert "Index Only Scan using vector_store_chunks_unsigned" in plan  # the unsigned
