"""The watchdog: runs whose worker died are failed, and their streams ended, not left hanging.

A run is orphaned when its row is `in_progress` but the worker that claimed it has no fresh
heartbeat (a SIGKILL, an OOM kill, a lost machine). The watchdog fails it with one
conditional UPDATE (a late-waking worker cannot then store over it), closes the items the
run left open from the events it had published, and appends `response.failed`: live
readers see the failure and the end. Every web and worker process runs it on a timer; a
Redis lock lets one of them do each round.
"""
import logging
import os
import threading
import time
from datetime import datetime, timezone

from django.conf import settings
from django.db import close_old_connections

from accounting import ratelimit

from . import backends
from .bus import event_bus
from .bus.entries import Entry
from .dispatch import dispatcher
from .models import ResponseStatus, StoredResponse
from .translation.recovery import close_dead_run
from .translation.sse import EventStamper, event_of_block, split_blocks
from .worker.heartbeat import heartbeats

log = logging.getLogger(__name__)

LOCK_KEY = "gw:watchdog"
REDISPATCH_BATCH = 500
_redispatched: dict[str, float] = {}  # response id -> when this process last sent it again
WORKER_LOST = ("server_error", "The worker running this response stopped before it finished; "
                               "the response was not completed.")


def fail_orphaned_runs() -> list[str]:
    """Fail every in-progress run whose worker is gone; the ids failed."""
    running = list(StoredResponse.objects.filter(status=ResponseStatus.IN_PROGRESS)
                   .values_list("id", "worker_id"))
    if not running:
        return []
    alive = heartbeats().alive({worker for _, worker in running if worker})
    failed = []
    for response_id, worker in running:
        if worker not in alive and fail_orphan(response_id):
            failed.append(response_id)
    return failed


def fail_orphan(response_id: str) -> bool:
    """Fail one run as lost; False if it ended meanwhile (its worker was alive after all)."""
    row = (StoredResponse.objects.filter(id=response_id, status=ResponseStatus.IN_PROGRESS)
           .only("id", "tenant_id", "store", "request", "resource").first())
    if row is None:
        return False
    bus = event_bus()
    retained = bus.read_retained(response_id)
    entries = [entry for entry in (retained.entries if retained else ()) if entry.error is None]
    published = [event_of_block(block) for entry in entries
                 for block in split_blocks(entry.data)]
    closing, output = close_dead_run(published)
    resource = row.resource
    resource.update(status="failed", output=output,
                    error={"code": WORKER_LOST[0], "message": WORKER_LOST[1]})
    won = StoredResponse.objects.filter(id=response_id, status=ResponseStatus.IN_PROGRESS).update(
        status=ResponseStatus.FAILED, resource=resource, error_code=WORKER_LOST[0])
    if not won:
        return False
    # its run slot and token estimate are given back now, not when the lease lapses
    ratelimit.settle(row.tenant_id, row.request.get("context") or {}, 0)
    if not row.store:
        StoredResponse.objects.filter(id=response_id).delete()
    next_number = entries[-1].last + 1 if entries else 0
    stamper = EventStamper(next_number)
    if next_number == 0:  # it never started: announce it so readers see whose failure it is
        closing = [{"type": "response.created", "response": {**resource, "status": "in_progress",
                                                            "error": None, "output": []}}]
    events = closing + [{"type": "response.failed", "response": resource}]
    data = stamper.render(events)
    if not bus.append_now(response_id, Entry(next_number, stamper.next_sequence_number - 1,
                                             data, end=True)):
        log.warning("run %s: its event stream refused the watchdog's end", response_id)
    log.warning("run %s failed: its worker stopped", response_id)
    return True


def redispatch_stale_queued() -> list[str]:
    """Send again the runs queued for too long: their task message died with a worker (the
    claim is atomic, so a duplicate message is harmless). Each at most once per period."""
    now = time.time()
    cutoff = datetime.fromtimestamp(now - settings.QUEUED_REDISPATCH_SECONDS, timezone.utc)
    stale = list(StoredResponse.objects.filter(status=ResponseStatus.QUEUED, created_at__lt=cutoff)
                 .order_by("created_at").values_list("id", flat=True)[:REDISPATCH_BATCH])
    sent = []
    for response_id in stale:
        if _redispatched.get(response_id, 0) > now - settings.QUEUED_REDISPATCH_SECONDS:
            continue
        _redispatched[response_id] = now
        dispatcher().resend(response_id)
        sent.append(response_id)
    for response_id, when in list(_redispatched.items()):
        if when < now - 2 * settings.QUEUED_REDISPATCH_SECONDS:
            del _redispatched[response_id]
    if sent:
        log.warning("sent again %d runs that stayed queued", len(sent))
    return sent


def run_round() -> list[str]:
    """One round, if this process holds the round's lock: the ids of the runs failed."""
    if not backends.in_process():
        from .redis_client import sync_redis

        interval_ms = int(settings.WATCHDOG_INTERVAL_SECONDS * 1000)
        if not sync_redis().set(LOCK_KEY, 1, nx=True, px=max(interval_ms - 100, 100)):
            return []
    failed = fail_orphaned_runs()
    redispatch_stale_queued()
    return failed


def start_background_thread(beat: bool) -> None:
    """Run rounds (and, in a worker, heartbeats) every interval on a daemon thread.
    WATCHDOG_ENABLED=0 turns this off (the test process importing the ASGI app does)."""
    if os.environ.get("WATCHDOG_ENABLED", "1") == "0":
        return
    thread = threading.Thread(target=_forever, args=(beat,), name="watchdog", daemon=True)
    thread.start()


def _forever(beat: bool) -> None:
    interval = settings.WATCHDOG_INTERVAL_SECONDS
    heartbeat_every = settings.WORKER_HEARTBEAT_TTL_SECONDS / 3
    next_round = time.monotonic() + interval
    while True:
        try:
            if beat:
                heartbeats().beat()
            if time.monotonic() >= next_round:
                next_round = time.monotonic() + interval
                run_round()
        except Exception as exc:  # Redis or the database away: try again next time
            log.warning("watchdog round failed: %s", exc)
        finally:
            close_old_connections()
        time.sleep(min(heartbeat_every, interval) if beat else interval)
