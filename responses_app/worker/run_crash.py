"""The safety net of a claimed run: an exception that escapes the phases' own handling
(our bug: a job its streaming phase cannot be built from, such as a stored row's corrupt
`resource`; a crash while the run ends a crash or a cancel; its settlement failing once
its result is stored) ends the run here, as the streaming phase's crash would have
(run_streaming.Streaming._crashed), so that its row never stays `in_progress` while its
worker lives and its client never waits for an end that will not come:

- its result stored (or its row removed) before it raised: its end (or its client's
  error) is published, as the storing phase would have;
- nothing of it out, nothing spent, and its client waiting (not background): its row is
  removed, its admission settled, and its client answered the bare 500;
- otherwise it fails in place, now, as the watchdog fails a run whose worker died
  (lifecycle.fail_orphan, with the crash's error): the items it published closed, its row
  stored `failed`, its stream ended with `response.failed` (a client waiting for the
  whole answer gets the 500 naming it: api/relay.py), its admission settled. Its state
  is not trusted then: the upstream calls it made are not counted (as a dead worker's).

If even that fails (the database away), the run is given up to the watchdog
(run_store.hand_over). A run that does not own its response is not ended here (run.py).

Before its claim is won, a run that raises otherwise than through an outage (its route
table unreadable, its claim's statement refused: our bug; an outage there abandons it,
or gives its message back: run_abandon.py) owns nothing yet, and is ended by `unclaimed`
as a crash before anything is: its client waiting (its message carries its job, or says
so), the row the web wrote for it removed (if still queued), its admission settled and
its client answered the bare 500; none waiting (a background run), its row, still
queued, failed in place (lifecycle.fail_orphan, with the crash's error: its stream ends
with `response.failed`, its admission is settled). Either way nothing is charged and its
message is settled: it would only raise again. A resent copy of a run whose response
another run has (its row claimed, or ended, by that run: its message given back while that
run lived) ends nothing: that run answers its client and settles its admission, once (a
second settlement would free the slot that run still holds). If its row cannot be removed
or failed (the database away), the message goes back to the queue, and its next run ends
it.
"""
import logging

from observability.request_context import bind_request_id

from .. import lifecycle
from ..bus import event_bus
from ..bus.entries import failure_entry, stamped_entry
from ..errors import CRASHED
from ..models import ResponseStatus
from .loop import blocking
from .run_store import hand_over
from .run_ending import Ending, crash_before_anything

log = logging.getLogger(__name__)

CRASH = ("server_error", CRASHED)  # the failed response's error (code, message)


async def crashed(job, streaming, observed, ended) -> None:
    """End the run of `job` (it owns its response) that raised: `streaming` its streaming
    phase (None: not built), `observed` its record (run_observer.ObservedRun),
    `ended(observed)` settles its admission and records it."""
    try:
        if observed.settled:  # its result stored or its row removed: its end is owed
            await _published(job, streaming, observed.ending)
        elif (streaming is None or streaming.untouched) and not job.background:
            await blocking(lifecycle.discard_unstarted, job.id)
            await _answered(observed, ended, _writer(job, streaming))
        else:
            observed.ending = Ending("fenced")  # ended in its place, and settled there
            if not await blocking(lifecycle.fail_orphan, job.id, CRASH):
                log.warning("run %s ended meanwhile; its crash ends nothing", job.id)
    except Exception:
        log.exception("run %s: its crash could not be ended; left to the watchdog", job.id)
        if not observed.settled:  # the watchdog settles it
            observed.ending = Ending("fenced")
        await hand_over(job.id, CRASHED)


async def _answered(observed, ended, writer) -> None:
    """A run that crashed with nothing of it out: its admission settled (`ended`), then its
    client answered the bare 500, the one even if the other fails."""
    observed.ending = crash_before_anything()
    try:
        await ended(observed)
    except Exception:
        log.exception("run %s: its admission could not be settled", observed.job.id)
    await writer.append(failure_entry(observed.ending.rejected), urgent=True)


def _writer(job, streaming):
    """The run's bus writer: its streaming phase's, or a new one (not built)."""
    return event_bus().writer(job.id) if streaming is None else streaming.writer


async def _published(job, streaming, ending: Ending) -> None:
    """The end `ending` of a run settled: its client's error, or its closing events."""
    writer = _writer(job, streaming)
    if ending.kind == "rejected":
        await writer.append(failure_entry(ending.rejected), urgent=True)
    elif ending.kind == "finished":
        await writer.append(stamped_entry(streaming.stamper, ending.closing, end=True),
                            urgent=True)


async def unclaimed(response_id: str, observed, settled, ended, writer=None) -> None:
    """End the run of `response_id` that raised before its claim was won: `observed` its
    record (run_observer.ObservedRun of its job, or of what its message says of its
    waiting client; None: no client waits), `settled(done)` its message's settlement,
    `ended(observed)` settles its admission and records it, `writer` its bus writer if its
    streaming phase has one."""
    try:
        if observed is None:  # no client waits: its row fails, as the watchdog's would
            await blocking(lifecycle.fail_orphan, response_id, CRASH, ResponseStatus.QUEUED)
            another_run = False
        else:  # the row the web wrote for it, if any
            another_run = await blocking(lifecycle.forget_before_claim, response_id)
    except Exception:
        log.exception("run %s: its crash before its claim could not be ended; its message "
                      "goes back to the queue", response_id)
        settled(False)
        return
    settled(True)
    if observed is None:
        return
    bind_request_id(observed.job.context.get("request_id"))
    if another_run:  # a resent copy: its stream, and its writer's state, are that run's
        log.warning("run %s: another run has its response; its copy ends nothing",
                    response_id)
        return
    writer = writer or event_bus().writer(response_id)
    try:
        await _answered(observed, ended, writer)
    except Exception:  # Redis away: its client's wait ends on the web
        log.exception("run %s: its crash could not be answered", response_id)
    finally:
        await writer.close()
