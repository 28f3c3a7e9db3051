"""Starting a run, from the request side: the dispatcher chosen by the deployment
(backends.py). In production it is the run queue, a Redis list that worker processes pop
(worker/run_queue.py); embedded, a runner on threads of this process
(worker/in_process.py). Either way the request side never imports the worker side.

A dispatcher has two calls: `send(job)` from an event loop (the web creating a response;
the message carries the job when `job.carried`, see jobs.py) and `resend(response_id)`
from a thread (the watchdog sending a queued run again; its claim reads the job).
"""
from functools import lru_cache

from observability import tracing

from . import backends
from .jobs import RUN_QUEUE_KEY, Job, run_message


@lru_cache(maxsize=1)
def dispatcher():
    """The process's dispatcher."""
    return backends.build("run_dispatcher")


class RunQueue:
    """Runs as messages on the Redis run queue."""

    async def send(self, job: Job) -> None:
        from .redis_client import async_redis

        await async_redis().lpush(RUN_QUEUE_KEY, job.message(tracing.carrier()))

    def resend(self, response_id: str) -> None:
        from .redis_client import sync_redis

        sync_redis().lpush(RUN_QUEUE_KEY, run_message(response_id))
