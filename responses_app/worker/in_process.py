"""The embedded mode's dispatcher: a run starts on a thread of this process, which hands
it to the run loop and waits for its end (see dispatch.py for the interface)."""
from concurrent.futures import ThreadPoolExecutor

from django.conf import settings
from django.db import close_old_connections

from observability import tracing

from ..delivery.jobs import Job
from .run import execute_run


class InProcessRunner:
    def __init__(self):
        self.threads = ThreadPoolExecutor(max_workers=settings.EMBEDDED_WORKER_THREADS,
                                          thread_name_prefix="embedded-run")

    async def send(self, job: Job) -> None:
        self.threads.submit(_run, job.id, job if job.carried else None, tracing.carrier())

    async def withdraw(self, message) -> bool:
        """A run handed to a thread is not taken back: it starts once a thread is free."""
        return False

    def resend(self, response_id: str) -> None:
        self.threads.submit(_run, response_id, None)


def _run(response_id: str, job: Job | None, trace: dict | None = None) -> None:
    try:
        with tracing.continued(trace, "run", {"gateway.response.id": response_id}):
            execute_run(response_id, job)
    finally:
        close_old_connections()
