"""Cancelling a run from any process: the request side asks, the run's process obeys.

A cancel request is a Redis key (`gw:cancel:<id>`, seen by a run that starts watching
late) plus a message on the `gw:cancel` channel, which one listener per worker event loop
turns into a call of the watching run's callback. Embedded, both halves live in one
process (the embedded mode) and a dict does the same. The run decides what cancelling means (it stops its
upstream call and tool calls, stores what was produced and ends its event stream).

A request carries why the run stops, which the callback is given: CANCELLED (the client
cancelled it, or left a `store: false` run) or STEERED (a WebSocket `response.steer`: the
run ends `incomplete` with reason `steered` and its successor takes the steering input).
The key holds the reason; the channel's message is the response id, followed by the
reason after a space unless it is CANCELLED.
"""
import asyncio
import logging
import threading
from functools import lru_cache

from django.conf import settings

from .. import backends
from ..redis_client import async_redis, sync_redis

log = logging.getLogger(__name__)

CHANNEL = "gw:cancel"
KEY_PREFIX = "gw:cancel:"
CANCELLED = "cancelled"
STEERED = "steered"
REASONS = (CANCELLED, STEERED)


@lru_cache(maxsize=1)
def cancellation():
    """The process's cancellation of this deployment (backends.py)."""
    return backends.build("cancellation")


def _reason(value: bytes | str | None) -> str:
    """The reason a key or a message names (an unknown one: cancelled)."""
    if isinstance(value, bytes):
        value = value.decode()
    return value if value in REASONS else CANCELLED


class Watch:
    """A run's registration, whose callback takes the reason: `close()` it when the run
    ends."""

    def __init__(self, registry: dict, response_id: str, callback):
        self.registry, self.response_id, self.callback = registry, response_id, callback
        registry[response_id] = self

    def close(self) -> None:
        if self.registry.get(self.response_id) is self:
            del self.registry[self.response_id]


class MemoryCancellation:
    def __init__(self):
        self._requested: dict[str, str] = {}  # response id -> reason
        self._watches: dict[str, Watch] = {}
        self._lock = threading.Lock()
        self._loops: dict[str, asyncio.AbstractEventLoop] = {}

    def request_cancel(self, response_id: str, reason: str = CANCELLED) -> None:
        with self._lock:
            self._requested[response_id] = reason
            watch = self._watches.get(response_id)
            loop = self._loops.get(response_id)
        if watch is not None and loop is not None:
            loop.call_soon_threadsafe(watch.callback, reason)

    async def watch(self, response_id: str, callback) -> Watch:
        with self._lock:
            watch = Watch(self._watches, response_id, callback)
            self._loops[response_id] = asyncio.get_running_loop()
            requested = self._requested.get(response_id)
        if requested is not None:
            callback(requested)
        return watch

    def forget(self, response_id: str) -> None:
        with self._lock:
            self._requested.pop(response_id, None)
            self._loops.pop(response_id, None)


class RedisCancellation:
    def __init__(self):
        self._watches: dict[str, Watch] = {}
        self._listeners: dict = {}  # event loop -> listener task

    # --- the request side (sync) -------------------------------------------------------------
    def request_cancel(self, response_id: str, reason: str = CANCELLED) -> None:
        pipe = sync_redis().pipeline(transaction=False)
        pipe.set(KEY_PREFIX + response_id, reason, ex=settings.RUN_DEADLINE_SECONDS)
        pipe.publish(CHANNEL, response_id if reason == CANCELLED else f"{response_id} {reason}")
        pipe.execute()

    # --- the run side (the run loop) -----------------------------------------------------------
    async def watch(self, response_id: str, callback) -> Watch:
        loop = asyncio.get_running_loop()
        listener = self._listeners.get(loop)
        if listener is None or listener.done():
            ready = loop.create_future()
            self._listeners[loop] = asyncio.ensure_future(self._listen(ready))
            await ready
        watch = Watch(self._watches, response_id, callback)
        # a request made before we listened is still in its key
        requested = await async_redis().get(KEY_PREFIX + response_id)
        if requested is not None:
            callback(_reason(requested))
        return watch

    def forget(self, response_id: str) -> None:
        return None  # the key expires by itself

    async def _listen(self, ready) -> None:
        while True:
            pubsub = async_redis().pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(CHANNEL)
                if not ready.done():
                    ready.set_result(None)
                async for message in pubsub.listen():
                    response_id, _, reason = message["data"].decode().partition(" ")
                    watch = self._watches.get(response_id)
                    if watch is not None:
                        watch.callback(_reason(reason))
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # Redis went away: keep trying, runs keep running
                log.warning("cancel listener lost Redis: %s", exc)
                if not ready.done():
                    ready.set_exception(exc)
                    return
                await asyncio.sleep(1)
            finally:
                await pubsub.aclose()
