"""Request `headers` of MCP tools on their way from the web process to the run.

They are never stored with the response: the web process seals them (mcp_tools.secrets)
into a short-lived Redis key named after the response (an in-process dict when embedded),
and the run takes them once (GETDEL) when it claims the response. Celery messages carry
the response id only.
"""
import threading
from functools import lru_cache

from django.conf import settings

from .secrets import open_json, seal_json

KEY = "mcp:headers:{}"
_memory: dict[str, str] = {}
_lock = threading.Lock()


@lru_cache(maxsize=1)
def _redis():
    import redis

    return redis.Redis.from_url(settings.REDIS_URL)


def keep(response_id: str, headers_by_label: dict) -> None:
    """Hold the headers for the run of `response_id` (at most the run deadline)."""
    token = seal_json(headers_by_label)
    if settings.EMBEDDED:
        with _lock:
            _memory[response_id] = token
        return
    _redis().set(KEY.format(response_id), token, ex=settings.RUN_DEADLINE_SECONDS)


def take(response_id: str) -> dict:
    """The headers kept for this run, by server_label ({} if none); they are gone afterwards."""
    if settings.EMBEDDED:
        with _lock:
            token = _memory.pop(response_id, None)
    else:
        token = _redis().getdel(KEY.format(response_id))
    if token is None:
        return {}
    return open_json(token.decode() if isinstance(token, bytes) else token) or {}
