"""Request `headers` of MCP tools on their way from the web process to the run.

They are never stored with the response: the web process seals them (mcp_tools.secrets)
into a short-lived Redis key named after the response (an in-process dict when embedded:
responses_app/backends.py), and the run takes them once (GETDEL) when it claims the
response. Run messages never carry them.
"""
import threading
from functools import lru_cache

from django.conf import settings

from responses_app import backends
from responses_app.redis_client import DRIVER_INFO

from .secrets import open_json, seal_json

KEY = "mcp:headers:{}"


@lru_cache(maxsize=1)
def _store():
    return backends.build("mcp_headers")


def keep(response_id: str, headers_by_label: dict) -> None:
    """Hold the headers for the run of `response_id` (at most the run deadline)."""
    _store().put(response_id, seal_json(headers_by_label))


def take(response_id: str) -> dict:
    """The headers kept for this run, by server_label ({} if none); they are gone afterwards."""
    token = _store().pop(response_id)
    if token is None:
        return {}
    return open_json(token.decode() if isinstance(token, bytes) else token) or {}


class MemoryHeaderStore:
    def __init__(self):
        self._tokens: dict[str, str] = {}
        self._lock = threading.Lock()

    def put(self, response_id: str, token: str) -> None:
        with self._lock:
            self._tokens[response_id] = token

    def pop(self, response_id: str):
        with self._lock:
            return self._tokens.pop(response_id, None)


class RedisHeaderStore:
    def __init__(self):
        import redis

        self._redis = redis.Redis.from_url(settings.REDIS_URL, driver_info=DRIVER_INFO)

    def put(self, response_id: str, token: str) -> None:
        self._redis.set(KEY.format(response_id), token, ex=settings.RUN_DEADLINE_SECONDS)

    def pop(self, response_id: str):
        return self._redis.getdel(KEY.format(response_id))
