"""The chunks' indexes after vector_stores 0004: the store foreign key's own two indexes
(plain and LIKE) dropped, as `vector_store_chunks_file` leads with its column (a read by
store takes it); 0004 reverses (the two built again) and applies again. The store file's
own index stays (the filtered text ranking's bitmap reads it; bench/README.md)."""
import os

import psycopg
import pytest

from tests.servers import Deployment, drop_postgres_database, fresh_postgres_database

pytestmark = pytest.mark.services

KEPT = ["vector_store_chunks_file", "vector_store_chunks_hnsw", "vector_store_chunks_pkey",
        "vector_store_chunks_signs", "vector_store_chunks_store_file_id_5055a13d",
        "vector_store_chunks_tsv", "vector_store_chunks_unsigned"]
DROPPED = ["vector_store_chunks_store_id_56b1a156",
           "vector_store_chunks_store_id_56b1a156_like"]


def indexes(url: str) -> list[str]:
    with psycopg.connect(url) as conn:
        return [name for name, in conn.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'vector_store_chunks' "
            "ORDER BY indexname").fetchall()]


def test_0004_drops_the_store_keys_indexes_and_reverses(tmp_path):
    name = f"gateway_chunk_indexes_{os.getpid()}"
    url = fresh_postgres_database(name)
    deployment = Deployment(tmp_path, {"DATABASE_URL": url, "LOG_LEVEL": "WARNING"},
                            worker=False)
    try:
        deployment.manage("migrate", "vector_stores", "0003", "-v0")
        assert indexes(url) == sorted(KEPT + DROPPED)
        deployment.manage("migrate", "-v0")
        assert indexes(url) == KEPT
        with psycopg.connect(url) as conn:  # a read by store (the deletion cascade's)
            conn.execute("SET enable_seqscan = off")
            plan = "\n".join(row for row, in conn.execute(
                "EXPLAIN DELETE FROM vector_store_chunks WHERE store_id IN ('vs_a', 'vs_b')"))
        assert "vector_store_chunks_file" in plan
        deployment.manage("migrate", "vector_stores", "0003", "-v0")
        assert indexes(url) == sorted(KEPT + DROPPED)
        deployment.manage("migrate", "vector_stores", "-v0")
        assert indexes(url) == KEPT
    finally:
        drop_postgres_database(name)
