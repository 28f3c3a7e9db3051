"""The watchdog: runs whose worker died are failed, and their streams ended, not left hanging.

A run is orphaned when its row is `in_progress` but the worker that claimed it has no fresh
heartbeat (a SIGKILL, an OOM kill, a lost machine). The watchdog fails it
(lifecycle.fail_orphan: one conditional UPDATE, so a late-waking worker cannot then store
over it; the items the run left open closed; `response.failed` appended): live readers
see the failure and the end. Every web and worker process runs it on a timer; a
Redis lock lets one of them do each round.
"""
import logging
import os
import threading
import time
from datetime import datetime, timezone

from django.conf import settings
from django.db import close_old_connections

from . import backends, lifecycle
from .dispatch import dispatcher
from .models import ResponseStatus, StoredResponse

log = logging.getLogger(__name__)

LOCK_KEY = "gw:watchdog"
REDISPATCH_BATCH = 500
_redispatched: dict[str, float] = {}  # response id -> when this process last sent it again


def fail_orphaned_runs() -> list[str]:
    """Fail every in-progress run whose worker is gone; the ids failed."""
    running = list(StoredResponse.objects.filter(status=ResponseStatus.IN_PROGRESS)
                   .values_list("id", "worker_id"))
    if not running:
        return []
    alive = backends.service("heartbeats").alive({worker for _, worker in running if worker})
    failed = []
    for response_id, worker in running:
        if worker not in alive and lifecycle.fail_orphan(response_id):
            failed.append(response_id)
    return failed


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
                backends.service("heartbeats").beat()
            if time.monotonic() >= next_round:
                next_round = time.monotonic() + interval
                run_round()
        except Exception as exc:  # Redis or the database away: try again next time
            log.warning("watchdog round failed: %s", exc)
        finally:
            close_old_connections()
        time.sleep(min(heartbeat_every, interval) if beat else interval)
