"""The vector ranking's HNSW statement by the server's pgvector version: the over-fetch
before 0.8, the iterative scan (hnsw.iterative_scan) from 0.8 on. The test suite's server
(pgserver) has pgvector 0.6.2, a machine's own PostgreSQL maybe a newer one: its version is read
for real and its path run; the 0.8 path's
statement is checked as text for a given version string and its query run on the corpus
(without its 0.8-only settings, which 0.6.2 refuses). bench/iterative_scans.py runs it on a
pgvector 0.8 server."""
import os
import re

import pytest
from django.db import connection
from django.db.models import Q

from tests.fake_upstream import fake_embedding
from tests.test_vector_store_search import alice, ingested_store, stores_settings  # noqa: F401
from vector_stores.models import Chunk, VectorStoreFile
from vector_stores.ranking import (TABLE_ROWS, Scope, index_scan, iterative_scans,
                                   nearest_statement)
from vector_stores.statements import Statement, run_together

pytestmark = pytest.mark.django_db

VECTOR = fake_embedding("brown fox")
NARROWED = Scope(["vs_1"], [3, 8], 20_000)  # a filter's files: 1 chunk in 5 of the table
WHOLE = Scope(["vs_1"], None, 100_000)


@pytest.mark.parametrize("version, iterative", [
    ("0.6.2", False), ("0.7.4", False), ("0.8.0", True), ("0.8.6", True), ("0.10.1", True),
    ("1.0", True), (None, False), ("", False), ("0.8.0-beta", True), ("dev", False)])
def test_iterative_scans_from_pgvector_0_8(version, iterative):
    assert iterative_scans(version) is iterative


def test_the_test_servers_pgvector_reads_and_its_path_is_taken(alice, settings):  # noqa: F811
    """The server's version is read for real and the statement is its version's: the
    over-fetch before 0.8 (the suite's throwaway server, pgserver's 0.6.2), the iterative
    scan from 0.8 on (a machine's own PostgreSQL with a newer pgvector); the server runs
    it, settings and all."""
    [[(rows, version)]] = run_together(TABLE_ROWS)
    assert re.fullmatch(r"\d+\.\d+\.\d+", version)
    if os.environ.get("TEST_SERVICES") == "throwaway":
        assert version == "0.6.2"  # pgserver's
    settings.VECTOR_SEARCH_EXACT_MAX_CHUNKS = 0
    settings.VECTOR_SEARCH_SIGNS_MAX_CHUNKS = 0  # the index's path, not the sign bits'
    settings.VECTOR_SEARCH_MAX_SCAN_TUPLES = 20_000
    statement = nearest_statement(NARROWED, VECTOR, 40, [(100_000.0, version)])
    if iterative_scans(version):
        sql, params = index_scan(VECTOR, 40, NARROWED.chunks).query.sql_with_params()
        assert statement == Statement(
            f"WITH nearest AS MATERIALIZED ({sql}) SELECT nearest.id, nearest.distance "
            f"FROM nearest WHERE nearest.distance < %s", [params[0], "{3,8}", 1.0],
            "SET LOCAL hnsw.ef_search = 60; SET LOCAL hnsw.iterative_scan = relaxed_order; "
            "SET LOCAL hnsw.max_scan_tuples = 20000")
    else:
        assert statement.setting == "SET LOCAL hnsw.ef_search = 300"  # 1.5 x 40 x 5
        sql, params = index_scan(VECTOR, 300).query.sql_with_params()
        assert statement == Statement(
            f"SELECT nearest.id, nearest.distance FROM ({sql}) AS nearest "
            f"WHERE nearest.store_file_id = ANY(%s) AND nearest.distance < %s",
            [*params, "{3,8}", 1.0], "SET LOCAL hnsw.ef_search = 300")  # the ids one literal
    assert run_together(statement) == [[]]  # no chunks here: the server took it, settings too


@pytest.mark.parametrize("scope, where, scope_sql, scope_params, bound", [
    (NARROWED, NARROWED.chunks, '("vector_store_chunks"."store_file_id" = ANY(%s::bigint[]))',
     [[3, 8]], ["{3,8}"]),  # the files' ids one array parameter, bound as one literal
    (WHOLE, Q(store_id__in=["vs_1"]), '"vector_store_chunks"."store_id" IN (%s)', ["vs_1"],
     ["vs_1"])])
def test_pgvector_0_8_scans_iteratively_with_the_scope_in_the_scan(settings, scope, where,
                                                                   scope_sql, scope_params,
                                                                   bound):
    settings.VECTOR_SEARCH_EXACT_MAX_CHUNKS = 10_000
    settings.VECTOR_SEARCH_MAX_SCAN_TUPLES = 20_000
    settings.VECTOR_SEARCH_SIGNS_MAX_CHUNKS = 0
    statement = nearest_statement(scope, VECTOR, 40, [(100_000.0, "0.8.1")])
    sql, params = index_scan(VECTOR, 40, where).query.sql_with_params()
    assert f" WHERE {scope_sql} ORDER BY" in sql and list(params)[1:] == scope_params
    assert statement == Statement(  # ef_search 1.5 x 40 whatever the filter
        f"WITH nearest AS MATERIALIZED ({sql}) SELECT nearest.id, nearest.distance "
        f"FROM nearest WHERE nearest.distance < %s", [params[0], *bound, 1.0],
        "SET LOCAL hnsw.ef_search = 60; SET LOCAL hnsw.iterative_scan = relaxed_order; "
        "SET LOCAL hnsw.max_scan_tuples = 20000")
    assert sql.endswith(" ORDER BY 2 ASC LIMIT 40")


def test_pgvector_0_8_exact_as_before_where_the_share_is_small_or_when_turned_off(settings):
    settings.VECTOR_SEARCH_EXACT_MAX_CHUNKS = 1_000
    settings.VECTOR_SEARCH_MAX_SCAN_TUPLES = 20_000
    settings.VECTOR_SEARCH_SIGNS_MAX_CHUNKS = 0
    assert nearest_statement(Scope(["vs_1"], [3], 5_000), VECTOR, 40,  # 1,200 neighbours
                             [(100_000.0, "0.8.1")]) is None
    assert nearest_statement(Scope(["vs_1"], [3], 6_000), VECTOR, 40,  # 1,000
                             [(100_000.0, "0.8.1")]).setting == (
        "SET LOCAL hnsw.ef_search = 60; SET LOCAL hnsw.iterative_scan = relaxed_order; "
        "SET LOCAL hnsw.max_scan_tuples = 20000")
    settings.VECTOR_SEARCH_MAX_SCAN_TUPLES = 0  # the over-fetch, as before 0.8
    assert nearest_statement(NARROWED, VECTOR, 40, [(100_000.0, "0.8.1")]).setting \
        == "SET LOCAL hnsw.ef_search = 300"


def test_the_iterative_statements_query_runs_on_the_hnsw_index(alice, settings):  # noqa: F811
    store_id = ingested_store(alice)
    settings.VECTOR_SEARCH_EXACT_MAX_CHUNKS = 0
    settings.VECTOR_SEARCH_SIGNS_MAX_CHUNKS = 0
    animals = list(VectorStoreFile.objects.filter(store_id=store_id, attributes__kind="animal")
                   .values_list("pk", flat=True))
    statement = nearest_statement(Scope([store_id], animals, 2), VECTOR, 40,
                                  [(5.0, "0.8.1")])
    with connection.cursor() as cursor:  # a tiny table is sorted, not searched, unless
        cursor.execute("SET LOCAL enable_sort = off")  # sorting costs too much
    assert "Index Scan using vector_store_chunks_hnsw" in "".join(
        row[0] for row in run_together(Statement("EXPLAIN " + statement.sql,
                                                 statement.params))[0])
    [rows] = run_together(Statement(statement.sql, statement.params))
    texts = dict(Chunk.objects.values_list("id", "text"))
    assert [(texts[chunk_id], round(distance, 6)) for chunk_id, distance in rows] == [
        ("The quick brown fox jumps over the lazy dog.", 0.573599),  # 1 - 2/sqrt(22)
        ("# Foxes\n\nA fox is a small omnivore. Foxes hunt mice at night.", 0.823223)]
    # the two "animal" files' chunks alone, nearest first: 1 - 1/sqrt(32)
