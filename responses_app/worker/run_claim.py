"""A run's claim of its response, in one form for every run: taken before the run starts
(a run whose message has no job reads it with its claim; a resent one writes its row
first), or confirmed while the run calls the upstream (a run sent with its job writes its
row as claimed meanwhile: lifecycle.claim_carried). Until it is confirmed, the run publishes nothing
(`gate`); refused, the run stops at once (`on_refused`) and stores and charges nothing.

A run that carries its job has a client waiting for its first event, as has a run whose
message says so without its job (delivery.jobs.Awaited: the web wrote its row): its claim
is tried again through a database outage until DATABASE_WAIT_SECONDS after the run started
(each attempt cut at that deadline), then the run is abandoned (ClaimAbandoned: its client
is answered 503, run_abandon.py), as a request that waits for the database is.
"""
import asyncio
import itertools
import logging
import time

from .. import lifecycle
from ..bus.entries import Entry
from ..delivery.heartbeat import worker_id
from ..errors import is_backing_service_outage
from ..lifecycle import database

log = logging.getLogger(__name__)

# seconds between a carried run's claim attempts through an outage (then the last again):
# at once first (the pool's next connection may be a live one), then backing off
CLAIM_RETRY_DELAYS = (0, 0.1, 0.25, 0.5, 1.0)


class RunNotClaimed(Exception):
    """The run was started before its claim was confirmed, and the claim failed."""


class ClaimAbandoned(Exception):
    """The claim met a database outage until its deadline: the run is abandoned."""


async def claimed_by(job, deadline: float) -> bool:
    """Write the row of `job` as claimed by this run (lifecycle.claim_carried), tried again
    through a database outage until `deadline` (time.monotonic()); whether the run got it.
    ClaimAbandoned once the time is up; any other error is raised at once."""
    return await _until(deadline, job.id, lambda: lifecycle.claim_carried(job, worker_id()))


async def job_claimed_by(response_id: str, deadline: float):
    """Take the queued response the web wrote and read its job (lifecycle.claim_job), tried
    again through a database outage until `deadline`, as `claimed_by`; None if another run
    has it or it is gone."""
    return await _until(deadline, response_id,
                        lambda: lifecycle.claim_job(response_id, worker_id()))


async def read_before_claim(deadline: float, response_id: str, read):
    """`await read()`, a run's database read before its claim (its upstream route), tried
    again through a database outage until `deadline` as the claim is (ClaimAbandoned then):
    a first attempt on a connection the outage broke does not abandon the run."""
    return await _until(deadline, response_id, read)


async def _until(deadline: float, response_id: str, claim):
    """`await claim()`, tried again through a database outage until `deadline`."""
    for tried in itertools.count():
        try:
            return await _attempt(claim(), deadline, response_id)
        except ClaimAbandoned:
            raise
        except Exception as exc:
            if not is_backing_service_outage(exc):
                raise
            delay = CLAIM_RETRY_DELAYS[min(tried, len(CLAIM_RETRY_DELAYS) - 1)]
            if time.monotonic() + delay >= deadline:
                raise ClaimAbandoned(response_id) from exc
            log.info("run %s: its claim met a database outage (%s); trying again",
                     response_id, exc)
            await asyncio.sleep(delay)


async def _attempt(statement, deadline: float, response_id: str):
    """One claim statement, awaited until `deadline`. One still running then (a stalled
    link, the pool's wait for a connection) is cancelled without being waited for: psycopg
    cancels a statement in flight on the server first, which can take seconds more."""
    attempt = asyncio.ensure_future(statement)
    try:
        await asyncio.wait((attempt,), timeout=max(deadline - time.monotonic(), 0))
    except BaseException:  # the run itself is cancelled
        _drop(attempt)
        raise
    if attempt.done():
        return attempt.result()
    _drop(attempt)
    database.met_outage()
    raise ClaimAbandoned(response_id)


def _drop(attempt: asyncio.Future) -> None:
    """Cancel `attempt`, its outcome not waited for (nor logged as never retrieved)."""
    attempt.cancel()
    attempt.add_done_callback(lambda done: done.cancelled() or done.exception())


class Claim:
    def __init__(self, response_id: str, task: asyncio.Future):
        self.response_id, self.task = response_id, task
        self._traceback = None  # of its statement's error, as it raised it (`refusal`)

    @classmethod
    def taken(cls, response_id: str) -> "Claim":
        """A claim the run holds already."""
        done = asyncio.get_running_loop().create_future()
        done.set_result(True)
        return cls(response_id, done)

    @classmethod
    def pending(cls, job, deadline: float) -> "Claim":
        """A claim sent now (the row of `job`, written as claimed), confirmed while the
        run goes on (abandoned if the database does not take it by `deadline`)."""
        claim = cls(job.id, asyncio.ensure_future(_claimed_after_the_run_starts(job, deadline)))
        claim.task.add_done_callback(claim._kept_traceback)
        return claim

    def _kept_traceback(self, task: asyncio.Future) -> None:
        if not task.cancelled() and task.exception() is not None:
            self._traceback = task.exception().__traceback__

    @property
    def abandoned(self) -> bool:
        """Whether the claim met a database outage until its deadline."""
        task = self.task
        return task.done() and not task.cancelled() \
            and isinstance(task.exception(), ClaimAbandoned)

    @property
    def refused(self) -> bool:
        """Whether the claim's statement raised otherwise than through an outage (our bug:
        the run ends as a crash before its claim, run_crash.unclaimed)."""
        task = self.task
        return task.done() and not task.cancelled() and task.exception() is not None \
            and not self.abandoned

    def refusal(self) -> tuple:
        """A refused claim's error, as `exc_info`: with the traceback its statement raised
        it with (awaiting the claim again gives it one of that await only)."""
        error = self.task.exception()
        return type(error), error, self._traceback or error.__traceback__

    @property
    def confirmed(self) -> bool:
        task = self.task
        return task.done() and not task.cancelled() and task.exception() is None \
            and task.result()

    async def owned(self) -> bool:
        """Whether the run owns the response (waits for the claim if it is not done)."""
        try:
            return await self.task
        except Exception:  # the database is away: the row stays queued, for the watchdog
            return False

    def on_refused(self, callback) -> None:
        """Call `callback()` on the loop as soon as the claim fails."""
        def done(task: asyncio.Future) -> None:
            if task.cancelled() or task.exception() is not None or not task.result():
                callback()

        self.task.add_done_callback(done)

    def on_settled(self, callback) -> None:
        """Call `callback(True)` once the claim is won or lost, `callback(False)` if it
        was cancelled (an abandoned or refused run settles it: run_abandon.py,
        run_crash.unclaimed)."""
        def done(task: asyncio.Future) -> None:
            if not (self.abandoned or self.refused):
                callback(not task.cancelled())

        self.task.add_done_callback(done)

    def gate(self, writer):
        """The run's bus writer, publishing nothing before the claim is confirmed."""
        return writer if self.confirmed else _ClaimedWriter(writer, self)


async def _claimed_after_the_run_starts(job, deadline: float) -> bool:
    """The claim of a run that carries its job, sent once the run's first step is done (its
    upstream request sent: the claim's round trip overlaps the upstream's first bytes
    instead of delaying the request)."""
    await asyncio.sleep(0)
    return await claimed_by(job, deadline)


class _ClaimedWriter:
    def __init__(self, writer, claim: Claim):
        self.writer, self.claim = writer, claim

    async def append(self, entry: Entry, urgent: bool = False, soon: bool = False) -> None:
        if not self.claim.confirmed and not await self.claim.owned():
            raise RunNotClaimed(self.claim.response_id)
        await self.writer.append(entry, urgent, soon)

    def put(self, entry: Entry) -> None:
        """A non-urgent append from sync code: only once the claim is confirmed."""
        if not self.claim.confirmed:
            raise RunNotClaimed(self.claim.response_id)
        self.writer.put(entry)

    async def close(self) -> None:
        await self.writer.close()
