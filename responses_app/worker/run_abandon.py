"""A run abandoned: its client waits for its first event, and its claim (run_claim.py), or
the route read before it (run.py), met a database outage until DATABASE_WAIT_SECONDS
after the run started; its message carries its job, or says that its client waits
(delivery.jobs.Awaited: the web wrote its row, and the run knows its client's admission
from the message). Its client is
answered the 503 `service_unavailable` (with Retry-After) that any request waiting that
long for the database gets (errors.database_did_not_answer), and the response never runs: the upstream is not called (or
the call sent beside the claim is closed), nothing is stored or charged, its admission is
settled as unused.

The order makes that hold through every failure: first the run's message goes back to the
queue marked abandoned (delivery/redelivery.py, in one step with its removal from this
worker's processing list), so no copy of the run that could run is left anywhere; only
then is the 503 published, and the admission settled (after it: settling may read the
tenant's limits from the database; without them, its slot is still released). The copy left (`discard`) calls no
upstream: once the database answers, it removes the row the claim may have written (a
claim whose statement committed as its connection failed), or the row the web wrote
(queued, or claimed by that statement), and the message is gone: the response ends as a
carried one does, with no row (its client never learned its id: the first event carries
it), as a run the web takes back does (services.response_withdraw). A
message given back meanwhile by the watchdog (this worker taken for dead) is that copy's
to answer: the run publishes nothing then. Embedded (no queue), a row that such a claim
wrote would stay `in_progress`: a known gap.
"""
import logging

from django.conf import settings

from observability.request_context import bind_request_id

from .. import lifecycle
from ..bus import event_bus
from ..bus.entries import failure_entry
from ..delivery.redelivery import ABANDONED
from ..errors import database_did_not_answer, is_backing_service_outage
from .loop import blocking
from .run_ending import Ending

log = logging.getLogger(__name__)


async def abandon(observed, settled, ended, writer=None) -> None:
    """Abandon the run `observed` (run_observer.ObservedRun): its message goes back marked
    abandoned (`settled(ABANDONED)`, the run queue's future), then its client is answered
    503 on `writer` (its bus writer) and its admission settled (`ended(observed)`)."""
    job = observed.job
    bind_request_id(job.context.get("request_id"))  # its log lines carry it
    observed.ending = Ending("unclaimed")  # nothing to settle, unless it is given back
    handed = settled(ABANDONED)
    if handed is not None:
        try:
            given = await handed
        except Exception as exc:  # Redis away too: the client's wait ends on the web
            log.error("run %s: its message could not be given back abandoned: %s", job.id, exc)
            return
        if not given:
            log.warning("run %s: its message was given back meanwhile; its copy answers",
                        job.id)
            return
    log.warning("run %s: a database outage kept it from starting (its claim or its route "
                "read, %g s); abandoned, its client answered 503", job.id,
                settings.DATABASE_WAIT_SECONDS)
    observed.ending = Ending("abandoned")
    writer = writer or event_bus().writer(job.id)
    try:
        await writer.append(failure_entry(database_did_not_answer()), urgent=True)
    finally:
        await writer.close()
        try:  # after the answer: settling may read the tenant's limits from the database
            await ended(observed)
        except Exception:
            log.exception("run %s: its admission could not be settled", job.id)


async def discard(response_id: str, settled) -> None:
    """The copy of an abandoned run: remove the row its claim may have written (or the web
    wrote), then settle the message (`settled(True)`); through an outage, the message goes
    back again (`settled(False)`)."""
    try:
        removed = await blocking(lifecycle.discard_abandoned, response_id)
    except Exception as exc:
        settled(False)
        if not is_backing_service_outage(exc):
            raise
        log.warning("abandoned run %s: the database is still away (%s); trying again later",
                    response_id, exc)
        return
    settled(True)
    log.info("abandoned run %s: %s", response_id,
             "the row its claim wrote is removed" if removed else "it left no row")
