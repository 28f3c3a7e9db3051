"""The backfill of the chunks' sign bits (sign_bits.py) left NULL by an upgrade: the chunks
stored before migration 0002 gave them a column (or written by a worker of the old code
during a rolling upgrade).

Periodic (celery beat, tasks.sign_unsigned_chunks every 60 s), in batches: each batch its
own short transaction, BATCH chunks taken in order from the partial index of the unsigned
ones (`vector_store_chunks_unsigned`, migration 0003) with FOR UPDATE, so
several workers at once sign different chunks and a second run finds nothing to do. One
run stops after SECONDS, before the next tick: at most about one worker busy with it,
the others left to ingestion. The migration did the same in one UPDATE of every row,
4 min 46 s for 100,000 chunks with the table locked; a batch holds the row locks of its
BATCH chunks only (search reads them meanwhile). The throughput (bench/README.md, "Sign
bits"): 555 chunks a second on a 100,000-chunk table of this 2-core machine (batches of
1,000, 1.8 s each at p50, load 2-4), where the migration's UPDATE did ~350.

The bits are computed in SQL from `embedding::real[]` (pgvector 0.6.2 has no
binary_quantize), as sign_bits.sign_bits computes them at ingestion: '1' where a
coordinate is > 0 (tests/test_vector_sign_backfill.py compares the two).
"""
import time

from django.db import connection, transaction

BATCH = 1000  # chunks a transaction: ~1.8 s each here (each re-inserted in the HNSW index)
SECONDS = 45.0  # a run's time, under the beat's 60 s

SIGNS_SQL = ("(SELECT string_agg(CASE WHEN value > 0 THEN '1' ELSE '0' END, '' ORDER BY n) "
             "FROM unnest({embedding}::real[]) WITH ORDINALITY AS coordinates(value, n))"
             "::bit varying")

SIGN_BATCH = (
    "WITH batch AS (SELECT id FROM vector_store_chunks WHERE signs IS NULL "
    "ORDER BY store_file_id, id LIMIT %s FOR UPDATE SKIP LOCKED) "
    f"UPDATE vector_store_chunks AS c SET signs = {SIGNS_SQL.format(embedding='c.embedding')} "
    "FROM batch WHERE c.id = batch.id")


def sign_batch(size: int = BATCH) -> int:
    """Sign at most `size` unsigned chunks in one transaction; how many were signed."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(SIGN_BATCH, [size])
        return cursor.rowcount


def sign_unsigned(size: int = BATCH, seconds: float = SECONDS) -> int:
    """Sign the unsigned chunks batch by batch until none is left (a batch short of `size`)
    or `seconds` have passed; how many were signed."""
    deadline = time.monotonic() + seconds
    signed = 0
    while True:
        batch = sign_batch(size)
        signed += batch
        if batch < size or time.monotonic() >= deadline:
            return signed
