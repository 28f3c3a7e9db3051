"""The event bus: one append-only event log per response, written by the run and read by
the relay. Redis Streams, or an in-process log in the embedded mode (backends.py); both
behind the same two halves: `writer()` for the run's loop, `subscribe()` for the web's
loop, and a sync `delete(*response_ids)` for deleted and pruned responses.
"""
from functools import lru_cache

from django.conf import settings

from .. import backends
from .entries import Entry, KEEPALIVE, StreamFenced  # noqa: F401


@lru_cache(maxsize=1)
def event_bus():
    """The process-wide bus of this deployment."""
    return backends.build("event_bus")


def memory_event_bus():
    from .memory import MemoryEventBus

    return MemoryEventBus(retention_seconds=settings.EVENT_RETENTION_SECONDS)


def redis_event_bus():
    from .redis import RedisEventBus

    return RedisEventBus(
        settings.REDIS_URL,
        retention_seconds=settings.EVENT_RETENTION_SECONDS,
        run_deadline_seconds=settings.RUN_DEADLINE_SECONDS,
        flush_interval=settings.STREAM_FLUSH_INTERVAL_MS / 1000,
        flush_tick=settings.STREAM_FLUSH_TICK_MS / 1000,
    )
