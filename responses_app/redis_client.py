"""The process's synchronous Redis client, for the few sync callers (cancel requests,
heartbeats, the watchdog). The event bus has its own async clients per event loop."""
from functools import lru_cache

import redis
from django.conf import settings


@lru_cache(maxsize=1)
def sync_redis() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=5, socket_connect_timeout=5,
                                health_check_interval=30)
