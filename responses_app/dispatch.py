"""Starting a run: a message on the run queue, a Redis list that worker processes pop
(production: responses_app/worker/run_queue.py), or the in-process dispatcher (embedded).
The request side never imports the worker side.

A message is the response id, or, for a run whose client waits for its first event and
that reads nothing stored (not background; no history, no conversation, no MCP tools:
see `services.NewResponse`), the id with the run's job: the row's columns a claim would
read (JOB_COLUMNS). The worker then calls the upstream while its claim is confirmed,
instead of after (worker/run.py).
"""
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import orjson
from django.conf import settings

RUN_QUEUE_KEY = "gw:runs"
RUN_TASK = "responses_app.run_response"  # the Celery task runs were once sent as
PRUNE_TASK = "responses_app.prune_responses"  # periodic, sent by `celery beat`
# A larger job travels in the database only: the worker reads it with its claim.
MAX_JOB_BYTES = 256 * 1024
# The columns of a response row that make its run's job (what a claim reads).
JOB_COLUMNS = ("tenant_id", "model", "store", "background", "previous_response_id", "request",
               "input_items", "resource", "conversation_id")


def job_columns(row) -> dict:
    """A new response row's job columns, as its message carries them."""
    return {name: getattr(row, name) for name in JOB_COLUMNS}


def run_message(response_id: str, job: dict | None = None) -> bytes:
    """The run queue's message for a run, with its job when one is given and small enough."""
    if job is not None:
        try:
            message = orjson.dumps({"id": response_id, "job": job})
        except TypeError:  # an integer beyond 64 bits: the database has the job
            return response_id.encode()
        if len(message) <= MAX_JOB_BYTES:
            return message
    return response_id.encode()


def parse_run_message(message: bytes) -> tuple[str, dict | None]:
    """(response id, job or None) of a run queue message."""
    if message.startswith(b"{"):
        parsed = orjson.loads(message)
        return parsed["id"], parsed["job"]
    return message.decode(), None


def dispatch_run(response_id: str) -> None:
    """Start a run that reads its job with its claim, from a sync caller (the watchdog
    sending a queued run again)."""
    if settings.EMBEDDED:
        _embedded_pool().submit(_run_embedded, response_id, None)
    else:
        from .redis_client import sync_redis

        sync_redis().lpush(RUN_QUEUE_KEY, run_message(response_id))


async def send_run(response_id: str, job: dict | None = None) -> None:
    """Start a run, from an event loop (the web creating a response)."""
    if settings.EMBEDDED:
        _embedded_pool().submit(_run_embedded, response_id, job)
    else:
        from .redis_client import async_redis

        await async_redis().lpush(RUN_QUEUE_KEY, run_message(response_id, job))


@lru_cache(maxsize=1)
def _embedded_pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=settings.EMBEDDED_WORKER_THREADS,
                              thread_name_prefix="embedded-run")


def _run_embedded(response_id: str, job: dict | None) -> None:
    from django.db import close_old_connections
    from importlib import import_module

    execute_run = import_module("responses_app.worker.run").execute_run
    try:
        execute_run(response_id, job)
    finally:
        close_old_connections()
