"""The process's Redis clients for everything but the event bus (which has its own): a
synchronous one for the few sync callers (cancel requests, heartbeats, the watchdog) and
an asynchronous one per event loop (sending runs, the cancel listener).

DRIVER_INFO, which every Redis client of the gateway is built with (`driver_info=`): the
name and version a connection sends in CLIENT SETINFO, made once per process. Given none,
redis-py 8 makes a DriverInfo for each connection a pool opens, and its version lookup
(importlib.metadata) reads the installed packages' metadata every time: 0.39 ms of CPU
per DriverInfo(). A new connection and its first PING, with the shared one (2026-11-27,
redis-py 8.1.0, 2,000 connections to a loopback Redis, paired default/shared/shared/
default): sync 0.80-0.86 -> 0.39-0.40 ms of CPU (0.47x, load 3.4; 1.22-1.27 -> 0.70-0.72
at load 5), the async pool's 1.33-1.43 -> 0.86-0.91 ms (0.63x, load 3.4-3.9). A pool opens
connections when a burst outgrows it, a one-connection client after a command it cut short
(bus.redis_codec), and a fresh process all of them.
"""
import asyncio
from functools import lru_cache

import redis
from django.conf import settings
from redis.driver_info import DriverInfo

DRIVER_INFO = DriverInfo()  # redis-py's own name and version, looked up once


@lru_cache(maxsize=1)
def sync_redis() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=5, socket_connect_timeout=5,
                                health_check_interval=30, driver_info=DRIVER_INFO)


def async_redis():
    """The running event loop's client."""
    return _async_client_for(asyncio.get_running_loop())


@lru_cache(maxsize=None)
def _async_client_for(loop):
    """Callers wait for a free connection rather than fail: a burst of new responses sends
    hundreds of runs at once."""
    import redis.asyncio as aioredis

    pool = aioredis.BlockingConnectionPool.from_url(
        settings.REDIS_URL, max_connections=64, timeout=20, socket_connect_timeout=5,
        driver_info=DRIVER_INFO)
    return aioredis.Redis(connection_pool=pool)
