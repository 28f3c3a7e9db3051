"""The worker's side of the run queue: run messages on one Redis list (see dispatch.py and jobs.py).

The web LPUSHes a queued response's id (with its job, when the run reads nothing else)
as it writes the response's row; each worker process has one consumer on its run loop
that takes messages while fewer than `concurrency` runs are in progress, and starts each
as a task on that loop. This is all a run needs from a broker, at a fraction
of a Celery task's cost per run (publish, message encoding, consumer hub, task tracing): at
the same guarantee (Celery's acks_late), 168-206 vs 1,493-1,710 us of client CPU and 46-54
vs 163-170 us of Redis CPU per run, ~12-14% of a response's all-in CPU (2026-11-27,
`python -m bench.run_queue`; docs/architecture.md's ledger says when Celery comes back).

Delivery is at least once (redelivery.py): a message is moved onto this worker's
processing list as it is taken (BLMOVE) and removed from it once its run's claim is
settled (LREM); if the worker dies in between, the watchdog gives it back to the queue.
A claim that fails (the database away) gives its message back too; one abandoned (a run
whose client waits, its claim failing for DATABASE_WAIT_SECONDS: worker/run_abandon.py)
gives it back at once, marked so that it never runs, before its client is answered. A
duplicate is harmless: the claim is one conditional UPDATE (queued → in_progress). A
message whose job cannot be read is run all the same (jobs.Unreadable: its run ends as a
crash before its claim); one whose id cannot be read is dropped, logged.

The LREMs ride with the consumer's next BLMOVE, in one write (a pipeline, LREMs first): at most
POP_TIMEOUT_SECONDS later while the queue is idle, at once when no run slot is free (the
consumer is not taking then). A worker stopping cleanly sends what it holds before it
gives back its list; one that dies gives back its settled messages too, whose duplicate
runs find their responses claimed. One write and one reply fewer per run (2026-11-28,
bench/README.md's fixed-cost round).

`RUN_QUEUE_STOP_BEFORE_CLAIM=1` (tests only) makes the consumer stop for good after it
has taken a message and before its run claims it, so a test can kill a worker there.
"""
import asyncio
import logging
import os
import threading
import time

import redis.asyncio as aioredis
from django.conf import settings
from redis.exceptions import RedisError

from observability import tracing

from ..redis_client import DRIVER_INFO
from .jobs import RUN_QUEUE_KEY, job_of_message
from .redelivery import ABANDONED, RECLAIM_SCRIPT, give_back_args, processing_key
from .heartbeat import worker_id

log = logging.getLogger(__name__)

POP_TIMEOUT_SECONDS = 1  # how soon a stopping consumer notices
GIVE_BACK_DELAY_SECONDS = 1.0  # a message whose claim failed goes back after this pause


class RunConsumer:
    """One worker process's consumer: pops ids while it may start a run, runs them with
    `run(response_id, job, ...)` (worker.run.run_response) on the event loop `loop` (the
    worker's run loop): both handed in by the worker process (gateway/celery.py), so that
    delivery never imports the worker side."""

    def __init__(self, concurrency: int, run, loop: asyncio.AbstractEventLoop):
        self.concurrency = concurrency
        self.run, self.loop = run, loop
        self.stopping = threading.Event()
        self.runs: set[asyncio.Task] = set()
        self.consuming = None  # the consumer's concurrent future, once started
        self.processing = processing_key(worker_id())
        self.client = None
        self.give_back = None
        self.free: asyncio.Semaphore | None = None  # run slots
        self.acks: list[bytes] = []  # settled messages, removed with the next take

    def start(self) -> None:
        self.consuming = asyncio.run_coroutine_threadsafe(self._consume(), self.loop)

    def stop(self) -> None:
        """Take no more runs; the runs in progress go on to their end."""
        self.stopping.set()
        try:
            self.consuming.result(POP_TIMEOUT_SECONDS + 6)
        except Exception as exc:
            log.warning("run queue consumer did not stop cleanly: %r", exc)
        asyncio.run_coroutine_threadsafe(self._runs_ended(), self.loop).result()

    async def _runs_ended(self) -> None:
        """Wait for the runs in progress; then give back what this worker still holds and
        leave the consumers (a worker stopping cleanly leaves nothing to the watchdog)."""
        if self.runs:
            await asyncio.wait(set(self.runs))
        if self.client is None:
            return
        try:
            if self.acks:
                await self._acked(self.client)
            messages = await self.client.lrange(self.processing, 0, -1)
            keys, args = give_back_args(worker_id(), messages, time.time() + 1)
            await self.give_back(keys=keys, args=args)
        except RedisError as exc:  # Redis away: the watchdog gives them back later
            log.warning("run queue: could not leave the consumers: %s", exc)
        finally:
            await self.client.aclose()

    async def _consume(self) -> None:
        self.free = free = asyncio.Semaphore(self.concurrency)
        self.client = client = aioredis.Redis.from_url(  # closed by _runs_ended
            settings.REDIS_URL, socket_connect_timeout=5, socket_timeout=POP_TIMEOUT_SECONDS + 5,
            driver_info=DRIVER_INFO)
        self.give_back = client.register_script(RECLAIM_SCRIPT)
        while not self.stopping.is_set():
            await free.acquire()  # fewer than `concurrency` runs in progress
            try:
                message = await self._take(client)
            except RedisError as exc:  # Redis away: try again shortly
                free.release()
                log.warning("run queue unavailable: %s", exc)
                await asyncio.sleep(1.0)
                continue
            if message is None:
                free.release()
                continue
            if os.environ.get("RUN_QUEUE_STOP_BEFORE_CLAIM") == "1":
                await asyncio.Event().wait()  # tests: killed here, holding the message
            task = asyncio.ensure_future(self._run(message, free))
            self.runs.add(task)
            task.add_done_callback(self.runs.discard)

    async def _take(self, client) -> bytes | None:
        """The next message, moved onto this worker's processing list (the worker is a
        registered consumer: its heartbeat registered it before the consumer started); the
        settled messages' LREMs sent before it, in the same write."""
        if not self.acks:
            return await client.blmove(RUN_QUEUE_KEY, self.processing, POP_TIMEOUT_SECONDS,
                                       "RIGHT", "LEFT")
        message = (await self._acked(client, take=True))[-1]
        if isinstance(message, Exception):
            raise message
        return message

    async def _acked(self, client, take: bool = False) -> list:
        """Send the pending acknowledgements (LREMs; then the take, BLMOVE, if `take`), one
        pipeline; its replies. A failed LREM leaves its message on the processing list, for
        the worker's clean stop or the watchdog to give back (its run's claim is settled: a
        duplicate run finds its response claimed)."""
        acks, self.acks = self.acks, []
        pipeline = client.pipeline(transaction=False)
        for message in acks:
            pipeline.lrem(self.processing, 1, message)
        if take:
            pipeline.blmove(RUN_QUEUE_KEY, self.processing, POP_TIMEOUT_SECONDS, "RIGHT", "LEFT")
        try:
            replies = await pipeline.execute(raise_on_error=False)
        except RedisError as exc:
            _log_failure(exc)
            raise
        for reply in replies[:len(acks)]:
            if isinstance(reply, Exception):
                _log_failure(reply)
        return replies

    async def _run(self, message: bytes, free: asyncio.Semaphore) -> None:
        try:
            try:
                response_id, job, trace = job_of_message(message)
            except Exception:  # not even its id: nobody to answer, and it never runs
                log.exception("run message %r cannot be read; dropped", message[:100])
                self._settled(message, True)
                return
            with tracing.continued(trace, "run", {"gateway.response.id": response_id}):
                await self.run(response_id, job,
                                   lambda settled: self._settled(message, settled))
        except Exception:
            log.exception("run %r crashed", message[:100])
        finally:
            free.release()

    def _settled(self, message: bytes, settled: bool | str) -> asyncio.Future | None:
        """The run's claim is settled (won or lost): the message leaves the processing list;
        or it failed (`settled` False): the message goes back to the queue, after a pause;
        or the run abandoned it (ABANDONED): the message goes back at once, marked so (the
        future of how many went back, 1 or 0: no longer on the list, a copy runs)."""
        if settled == ABANDONED:
            return asyncio.ensure_future(self._give_back(message, abandoned=True))
        if settled and not self.free.locked():  # the consumer takes: with its next take
            self.acks.append(message)
            return
        if settled:
            done = asyncio.ensure_future(self.client.lrem(self.processing, 1, message))
        else:
            done = asyncio.ensure_future(self._give_back(message))
        done.add_done_callback(_log_if_failed)
        return None

    async def _give_back(self, message: bytes, abandoned: bool = False) -> int:
        if not abandoned:
            await asyncio.sleep(GIVE_BACK_DELAY_SECONDS)
        keys, args = give_back_args(worker_id(), [message], abandoned=abandoned)
        return await self.give_back(keys=keys, args=args)


def _log_failure(exc: BaseException) -> None:
    """A taken message's LREM failed: the worker's clean stop, or the watchdog, gives it
    back."""
    log.warning("run queue: a taken message stays on its processing list: %s", exc)


def _log_if_failed(done: asyncio.Future) -> None:
    if not done.cancelled() and done.exception() is not None:
        _log_failure(done.exception())


_consumer: RunConsumer | None = None


def start_consumer(concurrency: int, run, loop: asyncio.AbstractEventLoop) -> RunConsumer:
    """Start this process's consumer (a worker process calls it once at start-up)."""
    global _consumer
    _consumer = RunConsumer(concurrency, run, loop)
    _consumer.start()
    return _consumer


def stop_consumer() -> None:
    if _consumer is not None:
        _consumer.stop()
