"""Starting a run, from the request side: the dispatcher chosen by the deployment
(backends.py). In production it is the run queue, a Redis list that worker processes pop
(run_queue.py); embedded, a runner on threads of this process
(worker/in_process.py). Either way the request side never imports the worker side.

A dispatcher's call is `send(job)`, from an event loop (the web creating a response; the
message carries the job when `job.carried`, see jobs.py). The run queue delivers each
message at least once (redelivery.py); the embedded runner also has `resend(response_id)`
(runs a previous process left queued; their claim reads the job).
"""
from functools import lru_cache

from observability import tracing

from .. import backends
from .jobs import RUN_QUEUE_KEY, Job


@lru_cache(maxsize=1)
def dispatcher():
    """The process's dispatcher."""
    return backends.build("run_dispatcher")


class RunQueue:
    """Runs as messages on the Redis run queue."""

    async def send(self, job: Job) -> None:
        from ..redis_client import async_redis

        await async_redis().lpush(RUN_QUEUE_KEY, job.message(tracing.carrier()))
