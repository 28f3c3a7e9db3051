"""A claimed run's statements through a database outage: reading what it needs after its
claim (its history, route and MCP plan) and storing its result.

A statement that meets an outage (the database unreachable from this worker, a timeout, a
read-only database, a connection the server closed: errors.is_backing_service_outage) is
tried again with backoff for up to RUN_DATABASE_RETRY_SECONDS, while the run's clients
wait (streams get their keep-alives): a database back within it serves the run as if
nothing happened. A result the database refuses for another reason (a bug, data it cannot
hold) is stored as failed instead, so that what the client is told and what is stored
agree.

Still failing when the time is up, the run is given up: a finished run's item ends are
published, and its id goes to the watchdog with the reason (delivery/heartbeat.py's
given-up runs); a process that reaches the database fails it there
(lifecycle.fail_orphan), ending its stream with the `response.failed` its stored row
holds. A claimed row never stays `in_progress` while its worker lives on. One attempt is
bounded by the connection's own timeouts (DATABASE_WAIT_SECONDS for a pooled connection,
DATABASE_TCP_TIMEOUT_SECONDS on a stalled link), so the retries end within
RUN_DATABASE_RETRY_SECONDS plus one of those.
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
NOT_PREPARED = "The response could not be run: the database did not answer."


class GivenUp(Exception):
    """The database did not serve the run within RUN_DATABASE_RETRY_SECONDS."""


class Stored(Enum):
    STORED = "stored"      # the result (or its failure) is stored: publish its end
    LOST = "lost"          # the run no longer owns its response (the watchdog ended it)
    DELETED = "deleted"    # its owner deleted the response meanwhile: publish its end
    GIVEN_UP = "given up"  # not stored in time: the watchdog ends it


async def through_outage(response_id: str, what: str, attempt):
    """`await attempt()`, tried again through a database outage; GivenUp once
    RUN_DATABASE_RETRY_SECONDS have passed (any other error is raised at once)."""
    deadline = time.monotonic() + settings.RUN_DATABASE_RETRY_SECONDS
    for tried in range(1_000_000):
        try:
            return await attempt()
        except Exception as exc:
            if not is_backing_service_outage(exc):
                raise
            delay = RETRY_DELAYS[min(tried, len(RETRY_DELAYS) - 1)]
            if time.monotonic() + delay > deadline:
                log.error("%s %s failed for %g s (%s); left to the watchdog", what,
                          response_id, settings.RUN_DATABASE_RETRY_SECONDS, exc)
                raise GivenUp(response_id) from exc
            log.warning("%s %s failed (%s); trying again in %g s", what, response_id, exc,
                        delay)
            await asyncio.sleep(delay)
    raise GivenUp(response_id)


async def prepared(response_id: str, prepare, job):
    """`prepare(job)` on a database thread, for a run that won its claim; through an
    outage. Failing still (GivenUp), the run is given up; raising what `prepare` did not
    turn into a job that fails at its start (run.py's `_prepare`: anything but an outage),
    it is raised, to the run's safety net (run_crash.crashed)."""
    try:
        return await through_outage(response_id, "preparing",
                                    lambda: blocking(prepare, job))
    except GivenUp:
        await hand_over(response_id, NOT_PREPARED)
        raise


async def store_with_retries(job, ending, first_delta_at) -> Stored:
    """Store the run's result (`job.resource`, its `ending`'s closing events), through an
    outage; a result refused otherwise is stored as failed (`ending` and `job.resource`
    say so then)."""
    def store():
        return lifecycle.store_result(job, job.resource, blocking, first_delta_at)

    try:
        stored = await through_outage(job.id, "storing", store)
    except GivenUp:
        return Stored.GIVEN_UP
    except Exception:
        log.exception("storing %s failed; storing it as failed", job.id)
        _as_failed(job, ending)
        try:
            stored = await through_outage(job.id, "storing", store)
        except Exception:  # given up, or refused again
            log.exception("storing %s as failed failed too; left to the watchdog", job.id)
            return Stored.GIVEN_UP
    if stored:
        return Stored.STORED
    try:
        deleted = await blocking(lifecycle.count_deleted_run, job, job.resource)
    except Exception:  # the database is away again: left as lost (its streams keep waiting)
        log.exception("run %s: whether its response was deleted could not be read", job.id)
        deleted = False
    return Stored.DELETED if deleted else Stored.LOST


async def give_up(job, streaming, ending) -> None:
    """Hand a finished run that could not be stored to the watchdog: its items' ends
    published first (what it produced is in its stream, which the watchdog reads)."""
    closing = [event for event in ending.closing if event["type"] not in TERMINAL_EVENTS]
    try:
        if closing:
            await streaming.writer.append(stamped_entry(streaming.stamper, closing),
                                          urgent=True)
    except Exception:  # Redis away too: the watchdog ends it with what it has
        log.exception("run %s: its items' ends could not be published", job.id)
    await hand_over(job.id, lifecycle.STORE_LOST[1])


async def hand_over(response_id: str, why: str) -> None:
    """Give the run up to the watchdog, which fails it with `why` (delivery/heartbeat.py)."""
    try:
        await blocking(heartbeats().give_up, response_id, why)
    except Exception:  # Redis away too: the run ends when this worker's heartbeat lapses
        log.exception("run %s could not be given up to the watchdog", response_id)


def _as_failed(job, ending) -> None:
    """The run's result replaced by its failure: the response failed, its end event too."""
    code, message = lifecycle.STORE_LOST
    job.resource["status"] = "failed"
    job.resource["error"] = {"code": code, "message": message}
    ending.closing = [e for e in ending.closing if e["type"] not in TERMINAL_EVENTS] + [
        {"type": "response.failed", "response": job.resource}]
