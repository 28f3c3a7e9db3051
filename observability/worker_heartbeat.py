"""The worker heartbeat: each Celery worker process keeps a Redis key
`gw:workers:<host>:<pid>` alive (refreshed every WORKER_HEARTBEAT_SECONDS, expiring after
three missed beats) from its run loop, so a worker whose loop is stuck or whose process
died disappears on its own. Readiness and metrics count the keys; a watchdog can use them.
"""
import asyncio
import logging
import os
import socket
import time

import orjson
from django.conf import settings

log = logging.getLogger(__name__)

KEY_PREFIX = "gw:workers:"
MISSED_BEATS = 3
_beating: asyncio.Future | None = None


def worker_key() -> str:
    return f"{KEY_PREFIX}{socket.gethostname()}:{os.getpid()}"


def live_workers(client) -> list[str]:
    """The names of the workers whose heartbeat is fresh (sync client)."""
    return [key.decode()[len(KEY_PREFIX):]
            for key in client.scan_iter(match=KEY_PREFIX + "*", count=1000)]


async def beat_forever(key: str, interval: float) -> None:
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(settings.REDIS_URL, socket_timeout=5,
                                     socket_connect_timeout=5)
    value = orjson.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                          "started_at": int(time.time())})
    while True:
        try:
            await client.set(key, value, px=int(interval * MISSED_BEATS * 1000))
        except Exception as exc:  # Redis away: keep trying, the key expires meanwhile
            log.warning("worker heartbeat failed: %s", exc)
        await asyncio.sleep(interval)


def on_worker_ready(**kwargs) -> None:
    """Celery's worker_ready: start beating on the run loop."""
    global _beating
    if settings.EMBEDDED or _beating is not None:
        return
    from responses_app.worker.loop import run_loop

    _beating = asyncio.run_coroutine_threadsafe(
        beat_forever(worker_key(), settings.WORKER_HEARTBEAT_SECONDS), run_loop())


def on_worker_shutdown(**kwargs) -> None:
    """Celery's worker_shutdown: stop beating and say so at once."""
    global _beating
    if _beating is None:
        return
    _beating.cancel()
    _beating = None
    from .redis_client import probe_client

    try:
        probe_client().delete(worker_key())
    except Exception as exc:
        log.warning("removing the worker heartbeat failed: %s", exc)
