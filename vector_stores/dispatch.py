"""Starting ingestion from the request side, once the rows are committed: a Celery task per
store file (by name, so the request side imports no task code), or, embedded (no Redis,
no Celery worker), a thread of this process running the same work."""
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

from celery import current_app
from django.conf import settings
from django.db import close_old_connections, transaction

from responses_app import backends

INGEST_TASK = "vector_stores.ingest_file"


def ingest_after_commit(store_file_ids: list[int]) -> None:
    if not store_file_ids:
        return
    ids = list(store_file_ids)
    if backends.in_process():
        transaction.on_commit(lambda: [_threads().submit(_run_here, pk) for pk in ids])
    else:
        transaction.on_commit(lambda: [current_app.send_task(INGEST_TASK, args=[pk])
                                       for pk in ids])


@lru_cache(maxsize=1)
def _threads() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=settings.EMBEDDED_INGESTION_THREADS,
                              thread_name_prefix="embedded-ingest")


def _run_here(store_file_id: int) -> None:
    from .tasks import ingest_in_process

    try:
        ingest_in_process(store_file_id)
    finally:
        close_old_connections()
