"""A run's claim of its response, in one form for every run: taken before the run starts
(a run whose message has no job reads it with its claim; a resent one writes its row
first), or confirmed while the run calls the upstream (a run sent with its job writes its
row as claimed meanwhile: lifecycle.claim_carried). Until it is confirmed, the run publishes nothing
(`gate`); refused, the run stops at once (`on_refused`) and stores and charges nothing.
"""
import asyncio
import logging

from .. import lifecycle
from ..bus.entries import Entry
from ..delivery.heartbeat import worker_id

log = logging.getLogger(__name__)


class RunNotClaimed(Exception):
    """The run was started before its claim was confirmed, and the claim failed."""


class Claim:
    def __init__(self, response_id: str, task: asyncio.Future):
        self.response_id, self.task = response_id, task

    @classmethod
    def taken(cls, response_id: str) -> "Claim":
        """A claim the run holds already."""
        done = asyncio.get_running_loop().create_future()
        done.set_result(True)
        return cls(response_id, done)

    @classmethod
    def pending(cls, job) -> "Claim":
        """A claim sent now (the row of `job`, written as claimed), confirmed while the
        run goes on."""
        claim = cls(job.id, asyncio.ensure_future(_claimed_after_the_run_starts(job)))
        claim.task.add_done_callback(claim._log_failure)
        return claim

    def _log_failure(self, task: asyncio.Future) -> None:
        if not task.cancelled() and task.exception() is not None:
            log.warning("run %s could not claim its response: %s", self.response_id,
                        task.exception())

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
        failed (the database away)."""
        self.task.add_done_callback(
            lambda task: callback(not task.cancelled() and task.exception() is None))

    def gate(self, writer):
        """The run's bus writer, publishing nothing before the claim is confirmed."""
        return writer if self.confirmed else _ClaimedWriter(writer, self)


async def _claimed_after_the_run_starts(job) -> bool:
    """The claim of a run that carries its job, sent once the run's first step is done (its
    upstream request sent: the claim's round trip overlaps the upstream's first bytes
    instead of delaying the request)."""
    await asyncio.sleep(0)
    return await lifecycle.claim_carried(job, worker_id())


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
