"""Storing a run's result when the database does not take it at once.

A store that meets an outage (the database unreachable from this worker, a timeout, a
read-only database: errors.is_backing_service_outage) is tried again with backoff for up
to WORKER_STORE_RETRY_SECONDS, while the run's clients wait (streams get their
keep-alives): a database that comes back within it gets the result as if nothing happened.
A result the database refuses for another reason (a bug, data it cannot hold) is stored as
failed instead, so that what the client is told and what is stored agree.

Still not stored when the time is up, the run is given up: the events of its items' ends
are published, its id goes to the watchdog (delivery/heartbeat.py's given-up runs), and a
process that reaches the database fails it there (lifecycle.fail_orphan), ending its
stream with the `response.failed` its stored row holds. Its row never stays
`in_progress` while its worker lives on. The bound on one attempt is the connection's
own (DATABASE_WAIT_SECONDS for a pooled connection, DATABASE_TCP_TIMEOUT_SECONDS on a
stalled link), so the retries end within WORKER_STORE_RETRY_SECONDS plus one of those.
"""
import asyncio
import logging
import time
from enum import Enum

from django.conf import settings

from .. import lifecycle
from ..bus.entries import stamped_entry
from ..delivery.heartbeat import heartbeats
from ..errors import is_backing_service_outage
from .loop import blocking

log = logging.getLogger(__name__)

TERMINAL_EVENTS = {"response.completed", "response.incomplete", "response.failed"}
RETRY_DELAYS = (0.25, 0.5, 1.0, 2.0)  # seconds, then the last one again


class Stored(Enum):
    STORED = "stored"      # the result (or its failure) is stored: publish its end
    LOST = "lost"          # the run no longer owns its response (the watchdog ended it)
    GIVEN_UP = "given up"  # not stored in time: the watchdog ends it


async def store_with_retries(job, ending, first_delta_at) -> Stored:
    """Store the run's result (`job.resource`, its `ending`'s closing events), retrying
    through an outage; a result refused otherwise is stored as failed (`ending` and
    `job.resource` say so then)."""
    deadline = time.monotonic() + settings.WORKER_STORE_RETRY_SECONDS
    attempt = 0
    while True:
        try:
            stored = await lifecycle.store_result(job, job.resource, blocking, first_delta_at)
            return Stored.STORED if stored else Stored.LOST
        except Exception as exc:
            if not is_backing_service_outage(exc):
                if job.resource.get("error") == _failed_error():
                    log.exception("storing %s as failed failed too; left to the watchdog",
                                  job.id)
                    return Stored.GIVEN_UP
                log.exception("storing %s failed; storing it as failed", job.id)
                _as_failed(job, ending)
                continue
            delay = RETRY_DELAYS[min(attempt, len(RETRY_DELAYS) - 1)]
            attempt += 1
            if time.monotonic() + delay > deadline:
                log.error("storing %s failed for %g s (%s); left to the watchdog", job.id,
                          settings.WORKER_STORE_RETRY_SECONDS, exc)
                return Stored.GIVEN_UP
            log.warning("storing %s failed (%s); trying again in %g s", job.id, exc, delay)
            await asyncio.sleep(delay)


async def give_up(job, streaming, ending) -> None:
    """Hand the run to the watchdog: its items' ends published (so what it produced is in
    its stream, which the watchdog reads), then its id given up."""
    closing = [event for event in ending.closing if event["type"] not in TERMINAL_EVENTS]
    try:
        if closing:
            await streaming.writer.append(stamped_entry(streaming.stamper, closing),
                                          urgent=True)
        await blocking(heartbeats().give_up, job.id)
    except Exception:  # Redis away too: the run ends when this worker's heartbeat lapses
        log.exception("run %s could not be given up to the watchdog", job.id)


def _failed_error() -> dict:
    code, message = lifecycle.STORE_LOST
    return {"code": code, "message": message}


def _as_failed(job, ending) -> None:
    """The run's result replaced by its failure: the response failed, its end event too."""
    job.resource["status"] = "failed"
    job.resource["error"] = _failed_error()
    ending.closing = [e for e in ending.closing if e["type"] not in TERMINAL_EVENTS] + [
        {"type": "response.failed", "response": job.resource}]
