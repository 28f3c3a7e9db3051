"""The worker's side of the run queue: run messages on one Redis list (see dispatch.py and jobs.py).

The web LPUSHes a queued response's id (with its job, when the run reads nothing else)
as it writes the response's row; each worker process has one consumer on its run loop
that BRPOPs messages while fewer than `concurrency` runs are in progress, and starts each
as a task on that loop. This is all a run needs from a broker, at a fraction
of a Celery task's cost per run (publish, message encoding, consumer hub, task tracing).

Delivery is at most once, as with the Celery broker without ack emulation: an id popped
by a worker that dies before claiming it stays `queued` in the database, and the watchdog
sends it again after QUEUED_REDISPATCH_SECONDS. A duplicate is harmless: the claim is
one conditional UPDATE (queued → in_progress).
"""
import asyncio
import logging
import threading

import redis.asyncio as aioredis
from django.conf import settings
from redis.exceptions import RedisError

from observability import tracing

from ..jobs import RUN_QUEUE_KEY, job_of_message
from .loop import run_loop
from .run import run_response

log = logging.getLogger(__name__)

POP_TIMEOUT_SECONDS = 1  # how soon a stopping consumer notices


class RunConsumer:
    """One worker process's consumer: pops ids while it may start a run, runs them."""

    def __init__(self, concurrency: int):
        self.concurrency = concurrency
        self.stopping = threading.Event()
        self.runs: set[asyncio.Task] = set()
        self.consuming = None  # the consumer's concurrent future, once started

    def start(self) -> None:
        self.consuming = asyncio.run_coroutine_threadsafe(self._consume(), run_loop())

    def stop(self) -> None:
        """Take no more runs; the runs in progress go on to their end."""
        self.stopping.set()
        try:
            self.consuming.result(POP_TIMEOUT_SECONDS + 6)
        except Exception as exc:
            log.warning("run queue consumer did not stop cleanly: %r", exc)
        asyncio.run_coroutine_threadsafe(self._runs_ended(), run_loop()).result()

    async def _runs_ended(self) -> None:
        if self.runs:
            await asyncio.wait(set(self.runs))

    async def _consume(self) -> None:
        free = asyncio.Semaphore(self.concurrency)
        client = aioredis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=5,
                                         socket_timeout=POP_TIMEOUT_SECONDS + 5)
        try:
            while not self.stopping.is_set():
                await free.acquire()  # fewer than `concurrency` runs in progress
                try:
                    popped = await client.brpop([RUN_QUEUE_KEY], timeout=POP_TIMEOUT_SECONDS)
                except RedisError as exc:  # Redis away: try again shortly
                    free.release()
                    log.warning("run queue unavailable: %s", exc)
                    await asyncio.sleep(1.0)
                    continue
                if popped is None:
                    free.release()
                    continue
                task = asyncio.ensure_future(self._run(popped[1], free))
                self.runs.add(task)
                task.add_done_callback(self.runs.discard)
        finally:
            await client.aclose()

    async def _run(self, message: bytes, free: asyncio.Semaphore) -> None:
        try:
            response_id, job, trace = job_of_message(message)
            with tracing.continued(trace, "run", {"gateway.response.id": response_id}):
                await run_response(response_id, job)
        except Exception:
            log.exception("run %r crashed", message[:100])
        finally:
            free.release()


_consumer: RunConsumer | None = None


def start_consumer(concurrency: int) -> RunConsumer:
    """Start this process's consumer (a worker process calls it once at start-up)."""
    global _consumer
    _consumer = RunConsumer(concurrency)
    _consumer.start()
    return _consumer


def stop_consumer() -> None:
    if _consumer is not None:
        _consumer.stop()
