"""The worker's side of the run queue: response ids on one Redis list (see dispatch.py).

The web LPUSHes a committed, queued response's id; each worker process has one consumer
thread that BRPOPs ids while it has a free run thread, and runs each on its own pool of
`concurrency` threads. This is all a run needs from a broker, at a fraction of a Celery
task's cost per run (publish, message encoding, consumer hub, task tracing).

Delivery is at most once, as with the Celery broker without ack emulation: an id popped
by a worker that dies before claiming it stays `queued` in the database, and the watchdog
sends it again after QUEUED_REDISPATCH_SECONDS. A duplicate is harmless: the claim is
one conditional UPDATE (queued → in_progress).
"""
import logging
import threading
from concurrent.futures import ThreadPoolExecutor

import redis
from django.conf import settings
from django.db import close_old_connections

from ..dispatch import RUN_QUEUE_KEY
from .run import execute_run

log = logging.getLogger(__name__)

POP_TIMEOUT_SECONDS = 1  # how soon a stopping consumer notices


class RunConsumer:
    """One worker process's consumer: pops ids while a run thread is free, runs them."""

    def __init__(self, concurrency: int):
        self.free = threading.Semaphore(concurrency)
        self.pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="run")
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._consume, name="run-queue", daemon=True)
        self.client = redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=5,
                                           socket_timeout=POP_TIMEOUT_SECONDS + 5)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        """Take no more runs; the runs in progress go on to their end."""
        self.stopping.set()
        self.thread.join(POP_TIMEOUT_SECONDS + 6)
        self.pool.shutdown(wait=True)

    def _consume(self) -> None:
        while True:
            self.free.acquire()  # a run thread is free
            if self.stopping.is_set():
                return
            try:
                popped = self.client.brpop([RUN_QUEUE_KEY], timeout=POP_TIMEOUT_SECONDS)
            except redis.RedisError as exc:  # Redis away: try again shortly
                self.free.release()
                log.warning("run queue unavailable: %s", exc)
                self.stopping.wait(1.0)
                continue
            if popped is None:
                self.free.release()
                continue
            self.pool.submit(self._run, popped[1].decode())

    def _run(self, response_id: str) -> None:
        try:
            execute_run(response_id)
        except Exception:
            log.exception("run %s crashed", response_id)
        finally:
            close_old_connections()
            self.free.release()


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

