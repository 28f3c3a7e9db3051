"""Starting a run: a Celery task sent by name (production) or the in-process dispatcher
(embedded). The request side never imports the worker side."""
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

from django.conf import settings

RUN_TASK = "responses_app.run_response"
PRUNE_TASK = "responses_app.prune_responses"  # periodic, sent by `celery beat`


def dispatch_run(response_id: str) -> None:
    """Start the run of a committed, queued response."""
    if settings.EMBEDDED:
        _embedded_pool().submit(_run_embedded, response_id)
    else:
        from gateway.celery import app

        # Celery's own retry loop would hold a web database thread; a failure is an error.
        app.send_task(RUN_TASK, args=[response_id], retry=False)


@lru_cache(maxsize=1)
def _embedded_pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=settings.EMBEDDED_WORKER_THREADS,
                              thread_name_prefix="embedded-run")


def _run_embedded(response_id: str) -> None:
    from django.db import close_old_connections
    from importlib import import_module

    execute_run = import_module("responses_app.worker.run").execute_run
    try:
        execute_run(response_id)
    finally:
        close_old_connections()
