"""Celery tasks of the vector stores: ingesting one store file (by its id only), the
periodic re-sending of stalled ingestions, and the periodic signing of the chunks an
upgrade left without sign bits (sign_backfill.py).

Database and storage errors give the claim back and retry with backoff (INGEST_RETRIES
times), then fail the file with `server_error`; what the file itself or the embedding
upstream gets wrong fails it at once (ingestion.py)."""
import logging

from celery import shared_task
from django.db import DatabaseError

from .ingestion import fail, ingest, stalled_files
from .sign_backfill import BATCH, SECONDS, sign_unsigned

log = logging.getLogger(__name__)

INGEST_TASK = "vector_stores.ingest_file"
REQUEUE_TASK = "vector_stores.requeue_stalled_ingestion"
SIGN_TASK = "vector_stores.sign_unsigned_chunks"
INGEST_RETRIES = 3
RETRIED = (DatabaseError, OSError)


@shared_task(name=INGEST_TASK, bind=True, ignore_result=True, max_retries=INGEST_RETRIES,
             acks_late=True)
def ingest_file(self, store_file_id: int) -> str:
    try:
        return ingest(store_file_id)
    except RETRIED as exc:
        if self.request.retries >= INGEST_RETRIES:
            log.exception("ingestion of vector store file %s gave up", store_file_id)
            return fail(store_file_id, "server_error", f"Ingestion failed: {type(exc).__name__}")
        raise self.retry(exc=exc, countdown=2 ** self.request.retries)


@shared_task(name=REQUEUE_TASK, ignore_result=True)
def requeue_stalled_ingestion() -> int:
    """Send again the tasks of files whose ingestion stalled (periodic, `celery beat`);
    a task whose file is already claimed or finished does nothing."""
    stalled = stalled_files()
    for store_file_id in stalled:
        ingest_file.delay(store_file_id)
    if stalled:
        log.warning("re-sent the ingestion of %d stalled vector store files", len(stalled))
    return len(stalled)


@shared_task(name=SIGN_TASK, ignore_result=True)
def sign_unsigned_chunks(batch_size: int = BATCH, seconds: float = SECONDS) -> int:
    """Sign the chunks stored without sign bits, in batches of `batch_size` (periodic,
    `celery beat`; once they are all signed, a probe of an empty index)."""
    signed = sign_unsigned(batch_size, seconds)
    if signed:
        log.info("signed %d vector store chunks stored without sign bits", signed)
    return signed


def ingest_in_process(store_file_id: int) -> str:
    """The embedded mode's run of the same task: the same retries, on this thread."""
    import time

    for attempt in range(INGEST_RETRIES + 1):
        try:
            return ingest(store_file_id)
        except RETRIED as exc:
            if attempt == INGEST_RETRIES:
                log.exception("ingestion of vector store file %s gave up", store_file_id)
                return fail(store_file_id, "server_error",
                            f"Ingestion failed: {type(exc).__name__}")
            time.sleep(2 ** attempt)
    return "failed"
