"""A small synchronous Redis client for probes (readiness, scrape-time metrics)."""
from functools import lru_cache

import redis
from django.conf import settings

from responses_app.redis_client import DRIVER_INFO


@lru_cache(maxsize=1)
def probe_client() -> redis.Redis:
    """Short timeouts: a probe answers quickly, whatever Redis does."""
    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=1, socket_connect_timeout=1,
                                driver_info=DRIVER_INFO)
