"""The process's Redis clients for everything but the event bus (which has its own): a
synchronous one for the few sync callers (cancel requests, heartbeats, the watchdog) and
an asynchronous one per event loop (sending runs, the cancel listener)."""
import asyncio
from functools import lru_cache

import redis
from django.conf import settings


@lru_cache(maxsize=1)
def sync_redis() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=5, socket_connect_timeout=5,
                                health_check_interval=30)


def async_redis():
    """The running event loop's client."""
    return _async_client_for(asyncio.get_running_loop())


@lru_cache(maxsize=None)
def _async_client_for(loop):
    """Callers wait for a free connection rather than fail: a burst of new responses sends
    hundreds of runs at once."""
    import redis.asyncio as aioredis

    pool = aioredis.BlockingConnectionPool.from_url(
        settings.REDIS_URL, max_connections=64, timeout=20, socket_connect_timeout=5)
    return aioredis.Redis(connection_pool=pool)
