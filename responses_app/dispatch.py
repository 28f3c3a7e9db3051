"""Starting a run: its id pushed on the run queue, a Redis list that worker processes pop
(production: responses_app/worker/run_queue.py), or the in-process dispatcher (embedded).
The request side never imports the worker side."""
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

from django.conf import settings

RUN_QUEUE_KEY = "gw:runs"
RUN_TASK = "responses_app.run_response"  # the Celery task runs were once sent as
PRUNE_TASK = "responses_app.prune_responses"  # periodic, sent by `celery beat`


def dispatch_run(response_id: str) -> None:
    """Start the run of a committed, queued response."""
    if settings.EMBEDDED:
        _embedded_pool().submit(_run_embedded, response_id)
    else:
        from .redis_client import sync_redis

        sync_redis().lpush(RUN_QUEUE_KEY, response_id)


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
