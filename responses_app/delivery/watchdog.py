"""The watchdog: runs whose worker died are failed, and their streams ended, not left hanging.

A run is orphaned when its row is `in_progress` but the worker that claimed it has no fresh
heartbeat (a SIGKILL, an OOM kill, a lost machine), or when its worker gave it up (the
database unreachable from that worker: worker/run_store.py). The watchdog fails it
(lifecycle.fail_orphan: one conditional UPDATE, so a late-waking worker cannot then store
over it; the items the run left open closed; `response.failed` appended): live readers
see the failure and the end. Every web and worker process runs it on a timer; a
Redis lock lets one of them do each round.

Each round also gives back to the run queue the messages that dead workers had taken and
not yet claimed (redelivery.py): a run is delivered at least once, with no memory of
what was sent. Embedded, the run queue is the process's own memory: when the process
starts, the runs a previous process left queued are sent again, once.
"""
import logging
import os
import threading
import time
from datetime import datetime, timezone

from django.conf import settings
from django.db import close_old_connections

# lifecycle runs up a floor: the watchdog fails an orphaned run through the lifecycle, the
# one writer of a response's status
from .. import backends, lifecycle
from .dispatch import dispatcher
from ..models import ResponseStatus, StoredResponse

log = logging.getLogger(__name__)

LOCK_KEY = "gw:watchdog"


def fail_orphaned_runs() -> list[str]:
    """Fail every in-progress run whose worker is gone or gave it up; the ids failed."""
    heartbeats = backends.service("heartbeats")
    given_up = heartbeats.given_up()  # read first: a run given up since is in_progress below
    running = list(StoredResponse.objects.filter(status=ResponseStatus.IN_PROGRESS)
                   .values_list("id", "worker_id"))
    alive = heartbeats.alive({worker for _, worker in running if worker}) if running else set()
    failed = []
    for response_id, worker in running:
        if response_id in given_up:
            if lifecycle.fail_orphan(response_id, ("server_error", given_up[response_id])):
                failed.append(response_id)
        elif worker not in alive and lifecycle.fail_orphan(response_id):
            failed.append(response_id)
    # the runs given up that are no longer in progress (failed now, or ended meanwhile)
    heartbeats.forget_given_up(set(given_up) - {response_id for response_id, _ in running
                                          if response_id not in failed})
    return failed


def give_back_dead_workers_runs() -> int:
    """Give back to the run queue the messages taken by workers that are gone."""
    from ..redis_client import sync_redis
    from .redelivery import reclaim_from_dead_workers

    return reclaim_from_dead_workers(sync_redis(), backends.service("heartbeats").alive)


def resend_runs_queued_before(started: datetime) -> list[str]:
    """Embedded: send again the runs left queued by a previous process (its dispatcher was
    its memory); each once, by the process that starts after it."""
    stale = list(StoredResponse.objects
                 .filter(status=ResponseStatus.QUEUED, created_at__lt=started)
                 .order_by("created_at").values_list("id", flat=True))
    for response_id in stale:
        dispatcher().resend(response_id)
    if stale:
        log.warning("sent again %d runs left queued by the previous process", len(stale))
    return stale


def run_round() -> list[str]:
    """One round, if this process holds the round's lock: the ids of the runs failed."""
    if not backends.in_process():
        from ..redis_client import sync_redis

        interval_ms = int(settings.WATCHDOG_INTERVAL_SECONDS * 1000)
        if not sync_redis().set(LOCK_KEY, 1, nx=True, px=max(interval_ms - 100, 100)):
            return []
    failed = fail_orphaned_runs()
    if not backends.in_process():
        give_back_dead_workers_runs()
    return failed


def start_background_thread(beat: bool) -> None:
    """Run rounds every interval on a daemon thread and, in a worker, heartbeats on another.
    WATCHDOG_ENABLED=0 turns this off (the test process importing the ASGI app does).

    The heartbeat has a thread of its own that touches only Redis: a round waits on the
    database (up to DATABASE_TCP_TIMEOUT_SECONDS and more when it stalls), and a heartbeat
    behind it would lapse, so a live worker would look dead and its runs be failed."""
    if os.environ.get("WATCHDOG_ENABLED", "1") == "0":
        return
    if beat:
        threading.Thread(target=_beat_forever, name="heartbeat", daemon=True).start()
    threading.Thread(target=_forever, name="watchdog", daemon=True).start()


def _beat_forever() -> None:
    """Refresh this worker's heartbeat three times per TTL (Redis only)."""
    heartbeats = backends.service("heartbeats")
    while True:
        try:
            heartbeats.beat()
        except Exception as exc:  # Redis away: the next beat tries again
            log.warning("heartbeat failed: %s", exc)
        time.sleep(settings.WORKER_HEARTBEAT_TTL_SECONDS / 3)


def _forever() -> None:
    started = datetime.now(timezone.utc)
    resend_queued = backends.in_process()
    interval = settings.WATCHDOG_INTERVAL_SECONDS
    while True:
        try:
            if resend_queued:
                resend_runs_queued_before(started)
                resend_queued = False
            run_round()
        except Exception as exc:  # Redis or the database away: try again next time
            log.warning("watchdog round failed: %s", exc)
        finally:
            close_old_connections()
        time.sleep(interval)
