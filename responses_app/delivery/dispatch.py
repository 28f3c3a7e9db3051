"""Starting a run, from the request side: the dispatcher chosen by the deployment
(backends.py). In production it is the run queue, a Redis list that worker processes pop
(run_queue.py); embedded, a runner on threads of this process
(worker/in_process.py). Either way the request side never imports the worker side.

A dispatcher's call is `send(job)`, from an event loop (the web creating a response; the
message carries the job when `job.carried`, see jobs.py): it returns what `withdraw`
takes back, a run its client gave up on before any worker took it (relay.first_entry: "No
worker started this response in time"), so that it never runs for nobody. The run queue
delivers each message at least once (redelivery.py); the embedded runner also has
`resend(response_id)` (runs a previous process left queued; their claim reads the job).
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

    async def send(self, job: Job) -> bytes:
        """Queue the run; its message (for `withdraw`)."""
        from ..redis_client import async_redis

        message = job.message(tracing.carrier())
        await async_redis().lpush(RUN_QUEUE_KEY, message)
        return message

    async def withdraw(self, message: bytes) -> bool:
        """Take the run off the queue; whether it was still there (a worker that took it
        has it in its own list: it runs)."""
        from ..redis_client import async_redis

        return await async_redis().lrem(RUN_QUEUE_KEY, 1, message) > 0
