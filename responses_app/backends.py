"""Which implementation of each process-wide service this deployment runs: the one place
that reads `settings.EMBEDDED`.

Embedded (no REDIS_URL), one process is web and worker: the event bus, cancel requests,
worker heartbeats, the rate limiter, MCP request headers and runs stay in memory, and a
run is started on a thread of this process. Otherwise they live in Redis and runs go to
the run queue that worker processes consume. Each service's module asks `build(NAME)` for
its implementation (and caches it): the table names them by dotted path, so the request
side never imports the worker side to choose the dispatcher.
"""
from functools import lru_cache

from django.conf import settings
from django.utils.module_loading import import_string

IN_PROCESS = {
    "event_bus": "responses_app.bus.memory_event_bus",
    "cancellation": "responses_app.delivery.cancellation.MemoryCancellation",
    "heartbeats": "responses_app.delivery.heartbeat.MemoryHeartbeats",
    "limiter": "accounting.limiter_memory.MemoryLimiter",
    "mcp_headers": "mcp_tools.header_store.MemoryHeaderStore",
    "run_dispatcher": "responses_app.worker.in_process.InProcessRunner",
}
REDIS = {
    "event_bus": "responses_app.bus.redis_event_bus",
    "cancellation": "responses_app.delivery.cancellation.RedisCancellation",
    "heartbeats": "responses_app.delivery.heartbeat.RedisHeartbeats",
    "limiter": "accounting.limiter_redis.limiter_from_settings",
    "mcp_headers": "mcp_tools.header_store.RedisHeaderStore",
    "run_dispatcher": "responses_app.delivery.dispatch.RunQueue",
}


def in_process() -> bool:
    """Whether this deployment is embedded (no Redis: one process is web and worker)."""
    return settings.EMBEDDED


@lru_cache(maxsize=None)
def service(name: str):
    """The process's instance of the service `name` (built on first use)."""
    return build(name)


def build(name: str):
    """A new instance of the service `name` as this deployment runs it."""
    return import_string((IN_PROCESS if in_process() else REDIS)[name])()
