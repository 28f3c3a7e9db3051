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

The embedded mode (no Redis, so no celery beat) runs the same on a timer instead: a daemon
thread of its one process (start_embedded_thread, from gateway/asgi.py), a run at start then
one every EMBEDDED_SIGN_INTERVAL_SECONDS, each at most SECONDS (three quarters of a shorter
interval). Cancel-safe as beat's runs are: a batch is one transaction, so a process stopped
in the middle of one (its embedded PostgreSQL stopped in fast mode, or the process killed)
leaves that batch unsigned, rolled back, for the next start; nothing half-written.
"""
import logging
import threading
import time

from django.conf import settings
from django.db import close_old_connections, connection, transaction

log = logging.getLogger(__name__)

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


def start_embedded_thread() -> bool:
    """Embedded: sign the unsigned chunks on a daemon thread of this process, on
    EMBEDDED_SIGN_INTERVAL_SECONDS's timer (0: not at all); whether it started."""
    interval = settings.EMBEDDED_SIGN_INTERVAL_SECONDS
    if interval <= 0:
        return False
    threading.Thread(target=sign_on_a_timer, args=(interval,), name="sign-backfill",
                     daemon=True).start()
    return True


def sign_on_a_timer(interval: float) -> None:
    """A run of sign_unsigned at once, then one every `interval` seconds, forever; each at
    most SECONDS, and at most three quarters of `interval` (the rest left to serving)."""
    seconds = min(SECONDS, 0.75 * interval)
    while True:
        started = time.monotonic()
        try:
            signed = sign_unsigned(BATCH, seconds)
            if signed:
                log.info("signed %d vector store chunks stored without sign bits", signed)
        except Exception as exc:  # the database away: the next run tries again
            log.warning("signing the unsigned vector store chunks failed: %s", exc)
        finally:
            close_old_connections()
        time.sleep(max(interval - (time.monotonic() - started), interval / 4))
