"""One run of a response, as a pipeline of phases:

1. claiming: the run takes its queued response (a run whose message has no job reads its
   job with the claim, then its history, upstream route and MCP plan on a database
   thread); a run sent with its job writes its row as claimed and does not wait: the
   claim is confirmed while it calls the upstream (run_claim.py), and it publishes,
   stores and charges nothing before it is (one that does not get it closes its upstream
   call at once and leaves no trace); a resent one (given back to the queue), or one
   sent while this process's last statement met an outage, claims first. A claim that
   meets a database outage: an id-only one with no client waiting (a background run)
   goes back to the queue (its run waits for the database); one whose client waits (its
   message carries its job, or says so: delivery.jobs.Awaited) is tried again until
   DATABASE_WAIT_SECONDS, then the run is abandoned, its client answered 503, and it
   never runs (run_abandon.py). A job that cannot be prepared otherwise than by an
   outage (our bug: a stored item its chat request cannot be built from) still goes on
   to stream, `unprepared` (run_job.py): its streaming phase fails at once, as a crash
   before any event (its client gets a 500, nothing stored; background: stored failed).
   Anything else it raises before its claim is won, not through an outage (its message's
   job or its route table unreadable, its claim's statement refused: our bug, or a
   message another version wrote), ends it at once as a crash then (run_crash.unclaimed:
   its waiting client answered the bare 500; background: its queued row failed), its
   message settled;
2. streaming, with the tool loop: the upstream's chunks become the response's events on
   the bus (run_streaming.py), until an `Ending`;
3. storing: the result is committed (lifecycle.store_result) before its terminal event is
   published, so a follow-up finds it; a result the watchdog gave up meanwhile is dropped;
   a store that meets a database outage is retried for a bounded time, then the run is
   left to the watchdog (run_store.py), as is a claimed run whose preparation does;
4. ended: the run's admission is settled and the run measured (run_observer.py), its
   log line written once its end is published.

From its claim on, an exception that escapes these phases' own handling (our bug) is
caught once, here, by the run's safety net (run_crash.py): the run is ended as its
streaming phase's crash would have ended it (a bare 500 before anything of it is out,
else `response.failed`, stored failed), never left `in_progress` with its client waiting.

A run is a coroutine on the process's run loop (`run_response`), so no thread waits while
it streams; `execute_run` is the sync entry (the embedded dispatcher).
"""
import asyncio
import logging
import time
from collections.abc import Callable

from django.conf import settings

from observability.request_context import bind_request_id
from upstreams.routing import remembered_route_for_model, route_for_model

from mcp_tools.run_plan import mcp_run_plan

from .. import lifecycle
from ..bus.entries import failure_entry, stamped_entry
from ..delivery.jobs import MESSAGE_KINDS, Awaited, Job, Unreadable, run_of_kind
from . import loop
from ..delivery.heartbeat import worker_id
from ..errors import is_backing_service_outage
from ..lifecycle import database
from .loop import blocking
from .run_abandon import abandon, discard
from .run_claim import Claim, ClaimAbandoned, claimed_by, job_claimed_by, read_before_claim
from .run_crash import crashed, unclaimed
from .run_job import RunJob, prepared, unprepared
from .run_observer import ObservedRun
from . import run_store
from .run_ending import Ending
from .run_streaming import Streaming

log = logging.getLogger(__name__)


def execute_run(response_id: str, job: Job | None = None) -> None:
    """Run a response from a sync caller, on the run loop, and wait for it to end."""
    loop.run(run_response(response_id, job))


async def run_response(response_id: str, carried: Job | Awaited | Unreadable | None = None,
                       settled: Callable[[bool], None] | None = None) -> None:
    """Run the response `response_id`; `carried` is its job when its message carried it (a
    foreground run that reads nothing stored: no history, no MCP tools), or what its message
    says of its waiting client when the web wrote its row (Awaited), or that its job cannot
    be read (Unreadable: it ends as a crash before its claim). `settled(True)` is
    called once its claim is won or lost, `settled(False)` if the claim failed (the run
    queue's acknowledgement; `settled(ABANDONED)` if the run was abandoned: run_abandon.py)."""
    kind = getattr(carried, "kind", None)
    if kind in MESSAGE_KINDS:  # another kind of run (a chat completion's: no row to claim)
        return await run_of_kind(kind)(carried, settled)
    settled = settled or _ignored
    if getattr(carried, "abandoned", False):  # its client was answered 503: it never runs
        return await discard(response_id, settled)
    try:
        claimed = await _claiming(response_id, carried, settled)
    except Exception as exc:
        if is_backing_service_outage(exc):
            raise
        return await _crashed_unclaimed(response_id, carried, settled)
    if claimed is None:
        return
    job, route, mcp_plan, claim = claimed
    observed = ObservedRun(job)
    streaming = None
    try:
        if route is None:  # claimed with its job: its history, route and MCP plan now
            job, route, mcp_plan = await run_store.prepared(job.id, _prepare, job)
            observed.job = job
        bind_request_id(job.context.get("request_id"))  # this task's log lines carry it
        streaming = Streaming(job, route, mcp_plan, claim)
        ending = observed.ending = await streaming.run()
        observed.first_delta_at = streaming.first_delta_at
        if not await claim.owned():
            return await _unowned(observed, claim, settled, streaming.bus_writer)
        await _storing(job, streaming, ending, observed)
    except run_store.GivenUp:  # its preparation met an outage: the watchdog ends it
        observed.ending = Ending("fenced")
    except Exception:  # outside the phases' own handling: the run's safety net
        log.exception("run %s crashed", job.id)
        if not await claim.owned():
            return await _unowned(observed, claim, settled,
                                  None if streaming is None else streaming.bus_writer)
        await crashed(job, streaming, observed, _ended)
    finally:
        await _ended(observed)
        try:
            await asyncio.sleep(0)  # the end's flush is sent before the log line is written
        finally:
            observed.log()


def _ignored(settled: bool) -> None:
    return None


async def _crashed_unclaimed(response_id: str, carried: Job | Awaited | Unreadable | None,
                             settled: Callable[[bool], None]) -> None:
    """The run raised before its claim, not through an outage (our bug): ended as a crash
    then (run_crash.unclaimed), its client (if one waits: `carried`) answered the 500."""
    log.exception("run %s crashed before its claim", response_id)
    observed = None if carried is None else ObservedRun(carried)
    await unclaimed(response_id, observed, settled, _ended)
    if observed is not None:
        observed.log()


async def _unowned(observed: ObservedRun, claim: Claim, settled: Callable[[bool], None],
                   writer) -> None:
    """A run that does not own its response: abandoned (its claim met a database outage:
    run_abandon.py), refused (its claim raised: run_crash.unclaimed), or stopped (another
    run has it, or it is gone)."""
    if claim.abandoned:
        return await abandon(observed, settled, _ended, writer)
    if claim.refused:  # logged once, here: with its request id and its statement's trace
        error = claim.refusal()
        log.error("run %s: its claim was refused: %s", claim.response_id, error[1],
                  exc_info=error)
        return await unclaimed(claim.response_id, observed, settled, _ended, writer)
    observed.ending = Ending("unclaimed")
    log.info("run %s: another run has its response, or it is gone; stopped", claim.response_id)


async def _claiming(response_id: str, carried: Job | Awaited | None,
                    settled: Callable[[bool], None]) -> tuple | None:
    """The run's job, its upstream route and MCP plan (None: read once claimed) and claim
    (None: another run has the response, or it is gone, or its claim failed, or it was
    abandoned). Raising (not an outage), the run crashed before its claim."""
    if carried is None or isinstance(carried, Awaited):
        return await _claiming_row(response_id, carried, settled)
    if isinstance(carried, Unreadable):  # its message's job cannot be read
        raise carried.error
    deadline = time.monotonic() + settings.DATABASE_WAIT_SECONDS
    try:  # before the claim: a route table read (every UPSTREAM_ROUTES_CACHE_SECONDS) that
        # meets an outage until the deadline abandons the run as its claim would
        route = remembered_route_for_model(carried.model) or await read_before_claim(
            deadline, response_id, lambda: blocking(route_for_model, carried.model))
    except ClaimAbandoned:
        return await _abandoned(carried, settled)
    job = _prepared(carried)  # after the route's read: its chat request is the route's
    if carried.resent or database.away():  # claim before calling the upstream
        try:
            if not await _claimed(claimed_by(carried, deadline), settled, response_id):
                return None
        except ClaimAbandoned:
            return await _abandoned(carried, settled)
        claim = Claim.taken(response_id)
    else:
        claim = Claim.pending(carried, deadline)
        claim.on_settled(settled)
    return job, route, None, claim


async def _claiming_row(response_id: str, awaited: Awaited | None,
                        settled: Callable[[bool], None]) -> tuple | None:
    """`_claiming` of a run whose row the web wrote: the claim reads its job. Through a
    database outage, with no client waiting its message goes back to the queue; with one
    (`awaited`), the claim is tried again until DATABASE_WAIT_SECONDS, then the run is
    abandoned, as a carried run is."""
    if awaited is None:
        claiming = lifecycle.claim_job(response_id, worker_id())
    else:
        claiming = job_claimed_by(response_id,
                                  time.monotonic() + settings.DATABASE_WAIT_SECONDS)
    try:
        job = await _claimed(claiming, settled, response_id)
    except ClaimAbandoned:
        return await _abandoned(awaited, settled)
    return None if job is None else (job, None, None, Claim.taken(response_id))


async def _abandoned(carried: Job | Awaited, settled: Callable[[bool], None]) -> None:
    """The run of `carried` abandoned before it started (run_abandon.py): None."""
    observed = ObservedRun(carried)
    await abandon(observed, settled, _ended)
    observed.log()
    return None


async def _claimed(claiming, settled: Callable[[bool], None], response_id: str):
    """The claim's outcome, `settled` told whether it was settled (won or lost) or failed
    (None then, when the database is away: the message goes back to the queue). A claim
    abandoned (ClaimAbandoned), or refused (not an outage), is raised, its settlement left
    to the run."""
    try:
        outcome = await claiming
    except ClaimAbandoned:
        raise
    except Exception as exc:
        if not is_backing_service_outage(exc):
            raise
        settled(False)
        log.warning("run %s: its claim met a database outage (%s); it goes back to the "
                    "queue", response_id, exc)
        return None
    except BaseException:  # the run is cancelled: its message goes back
        settled(False)
        raise
    settled(True)
    if not outcome:
        log.info("run %s already claimed or gone", response_id)
    return outcome


def _prepare(job: Job):
    """The claimed job with its history, its upstream route and MCP plan (database thread);
    failing (not an outage: run_store tries again), the job `unprepared`, no route or plan."""
    try:
        ready = prepared(job)
        return ready, route_for_model(ready.model), mcp_run_plan(ready)
    except Exception as exc:
        return _unprepared(job, exc), None, None


def _prepared(job: Job) -> RunJob:
    """The carried job prepared (it reads nothing stored); failing, `unprepared`."""
    try:
        return prepared(job)
    except Exception as exc:
        return _unprepared(job, exc)


def _unprepared(job: Job, exc: Exception) -> RunJob:
    """The job whose preparation raised `exc`, `unprepared`; an outage is raised again."""
    if is_backing_service_outage(exc):
        raise exc
    return unprepared(job, exc)


async def _storing(job: RunJob, streaming: Streaming, ending: Ending,
                   observed: ObservedRun) -> None:
    """Store the result, settle the run, then publish its end (or the client's error)."""
    if ending.kind == "rejected":
        await blocking(lifecycle.discard_unstarted, job.id)
        await _ended(observed)
        await streaming.writer.append(failure_entry(ending.rejected))
    elif ending.kind == "finished":
        stored = await run_store.store_with_retries(job, ending, streaming.first_delta_clock)
        # lost: the watchdog failed it meanwhile, ended its stream, settled it
        if stored is run_store.Stored.LOST:
            log.warning("run %s ended after it was given up; its result is dropped", job.id)
            observed.ending = Ending("fenced")
            return
        if stored is run_store.Stored.GIVEN_UP:  # the watchdog fails, ends and settles it
            await run_store.give_up(job, streaming, ending)
            observed.ending = Ending("fenced")
            return
        await _ended(observed)
        await streaming.writer.append(stamped_entry(streaming.stamper, ending.closing,
                                                    end=True))


async def _ended(observed: ObservedRun) -> None:
    """Settle the run and record it, once (a run that never owned its response: neither):
    on the loop, unless its admission is settled with the limiter (a blocking call)."""
    if observed.settled or (observed.ending is not None and observed.ending.kind == "unclaimed"):
        return
    if observed.job.context.get("limited"):
        await blocking(observed.ended)
    else:
        observed.ended()
