"""The ends of a response decided outside its run, from a thread: cancelled while queued
(the cancel service), orphaned (the watchdog: its worker died; or its run crashed before
its claim), never started (the run was not sent, the upstream refused it before it
started, or its claim met a database outage and its client was answered 503); and the
settlement every ended run owes its admission.

Each end is one conditional write (a claim, a late worker's store, or another end then
finds nothing to do), then the admission is settled and the event stream ended.
"""
import logging

import orjson

from accounting import ratelimit

from ..bus import event_bus
from ..bus.entries import Entry, stamped_entry
from ..models import ResponseStatus, StoredResponse
from ..translation.recovery import close_dead_run
from ..translation.numbering import EventStamper

log = logging.getLogger(__name__)

WORKER_LOST = ("server_error", "The worker running this response stopped before it finished; "
                               "the response was not completed.")
# a run whose worker could not store its result (worker/run_store.py), ended in its place
STORE_LOST = ("server_error", "The response could not be stored.")


def settle(tenant_id: int, context: dict, used_tokens: int) -> None:
    """A run ended having used `used_tokens`: its admission is settled (its slot freed,
    its token estimate replaced by what it used)."""
    ratelimit.settle(tenant_id, context, used_tokens)


def cancel_queued(row: StoredResponse) -> dict | None:
    """Cancel a queued response (its run then never claims it), give back its admission and
    end its event stream; the response object, or None if it was no longer queued."""
    resource = {**row.resource, "status": ResponseStatus.CANCELLED.value}
    cancelled = StoredResponse.objects.filter(id=row.id, status=ResponseStatus.QUEUED).update(
        status=ResponseStatus.CANCELLED, resource=resource)
    if not cancelled:
        return None
    _settled_and_ended(row, EventStamper(), [])
    return resource


ORPHAN_END_ATTEMPTS = 3


def fail_orphan(response_id: str, error: tuple[str, str] = WORKER_LOST,
                status: str = ResponseStatus.IN_PROGRESS) -> bool:
    """Fail a run whose worker died (or gave it up), or (`status` queued) a background run
    that crashed before its claim: close the items it left open from the events it had
    published, and end its stream with `response.failed` carrying `error` (code,
    message); False if it ended meanwhile (or was claimed)."""
    row = (StoredResponse.objects.filter(id=response_id, status=status)
           .only("id", "tenant_id", "store", "request", "resource").first())
    if row is None:
        return False
    seen, end, resource = _orphan_end(row, error)
    won = StoredResponse.objects.filter(id=response_id, status=status).update(
        status=ResponseStatus.FAILED, resource=resource, error_code=error[0])
    if not won:
        return False
    if not row.store:
        StoredResponse.objects.filter(id=response_id).delete()
    settle(row.tenant_id, row.request.get("context") or {}, 0)
    for _ in range(ORPHAN_END_ATTEMPTS):
        if event_bus().append_now(response_id, end, seen):
            break
        # the run wrote after the read (its worker only looked dead): read again
        seen, end, resource = _orphan_end(row, error)
        StoredResponse.objects.filter(id=response_id, status=ResponseStatus.FAILED).update(
            resource=resource)
    else:
        log.warning("run %s: its event stream refused the end", response_id)
    log.warning("run %s failed: %s", response_id, error[1])
    return True


def _orphan_end(row: StoredResponse, error: tuple[str, str]) -> tuple[int, Entry, dict]:
    """The end of a dead run's stream, from what it published: (the number of entries
    read, the entry that closes its open items and fails it, the failed response)."""
    retained = event_bus().read_retained(row.id)
    seen = len(retained.entries) if retained else 0
    entries = [entry for entry in (retained.entries if retained else ()) if entry.error is None]
    published = [orjson.loads(event) for entry in entries for event in entry.events]
    closing, output = close_dead_run(published)
    resource = {**row.resource, "status": "failed", "output": output,
                "error": {"code": error[0], "message": error[1]}}
    stamper = EventStamper(entries[-1].last + 1 if entries else 0)
    if stamper.next_sequence_number == 0:  # it never started: say whose failure it is
        closing = [{"type": "response.created", "response": {**resource, "status": "in_progress",
                                                            "error": None, "output": []}}]
    failed = {"type": "response.failed", "response": resource}
    return seen, stamped_entry(stamper, closing + [failed], end=True), resource


def _settled_and_ended(row: StoredResponse, stamper: EventStamper, events: list) -> None:
    """Give back the run's slot and token estimate now (not when the lease lapses), and end
    its event stream with `events`."""
    settle(row.tenant_id, row.request.get("context") or {}, 0)
    if not event_bus().append_now(row.id, stamped_entry(stamper, events, end=True)):
        log.warning("run %s: its event stream refused the end", row.id)


def forget_unsent(response_id: str) -> None:
    """A response whose run could not be sent is removed (the client gets the error)."""
    StoredResponse.objects.filter(id=response_id, status=ResponseStatus.QUEUED).delete()


def forget_before_claim(response_id: str) -> bool:
    """The row the web wrote for a run that crashed before its claim is removed (if still
    queued); whether another run has the response (its row claimed, or ended, by that run:
    a resent copy's): its answer and its admission's settlement are that run's."""
    if StoredResponse.objects.filter(id=response_id, status=ResponseStatus.QUEUED).delete()[0]:
        return False
    return StoredResponse.objects.filter(id=response_id).exists()


def discard_unstarted(response_id: str) -> None:
    """A run refused before it started leaves nothing behind (the client gets the error)."""
    StoredResponse.objects.filter(id=response_id).delete()


def discard_abandoned(response_id: str) -> bool:
    """The row a run abandoned while claiming may have written (its claim's statement
    committed as its connection failed), or the web wrote for it (queued, or claimed by
    such a statement), is removed; whether there was one."""
    return bool(StoredResponse.objects.filter(
        id=response_id, status__in=(ResponseStatus.QUEUED, ResponseStatus.IN_PROGRESS))
        .delete()[0])
