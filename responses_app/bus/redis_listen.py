"""A web loop's pub/sub connection to the bus: it subscribes to the streams the loop relays
(each stream's key is its channel: the flush script publishes every entry it appends,
redis_append.py) and hands each message, and each confirmed subscription, to the reader
(redis_reader.py), which holds the streams' truth against them.

redis-py opens the connection (its URL's address, TLS, credentials, protocol version and
CLIENT SETINFO, as every client of ours); then its transport is handed to a protocol of
our own that feeds hiredis from `data_received` and hands each message on from there, and
SUBSCRIBE and UNSUBSCRIBE are written to the transport as they come: no task wakes per
message or per command. Through redis-py's `read_response` per message instead, the web
spent 50.6-54.4 us per entry against the shared XREAD's 35.8-36.6 (bench/paced_web.py,
300 streams at 50 ms pacing, load 3.1-3.8); this way 34.6-35.4 against 40.6-41.9 in the
next pair (2026-11-28). It takes the transport from redis-py's stream writer
(`Connection._writer`, redis-py 8.1), a private attribute: tests/test_event_bus_pubsub.py
runs this on a real Redis.
"""
import asyncio
import logging

import hiredis
from redis.exceptions import ConnectionError as RedisConnectionError

from .redis_codec import one_connection_client
from .redis_xread import bulk

log = logging.getLogger(__name__)

MESSAGE, SUBSCRIBED = b"message", b"subscribe"


class Listener:
    """One connection in subscribed mode. `on_message(channel, data)` for every message,
    `on_subscribed(channel)` when a subscription is in force (what is published from then
    on reaches us), `on_failure(exc)` when the connection is lost (the caller fails its
    readers and replaces the listener: one is used once)."""

    def __init__(self, url: str, on_message, on_subscribed, on_failure):
        self.client = one_connection_client(url)
        self.on_message, self.on_subscribed, self.on_failure = on_message, on_subscribed, on_failure
        self.transport: asyncio.Transport | None = None
        self.ready: asyncio.Future | None = None
        self.lost = False

    @property
    def listening(self) -> bool:
        """Connecting or connected, not lost."""
        return self.ready is not None and not self.lost

    def begin(self) -> asyncio.Future:
        """Connect (once); the future is done once connected, or raises why not."""
        if self.ready is None:
            self.ready = asyncio.ensure_future(self._connect())
        return self.ready

    async def _connect(self) -> None:
        try:
            await self.client.initialize()
            connection = self.client.connection
            await connection.connect()
            transport = connection._writer.transport  # see the module's docstring
        except Exception:
            self.lost = True
            raise
        transport.set_protocol(_Pushes(self))
        self.transport = transport

    def subscribe(self, channel: str) -> None:
        self._write(b"*2\r\n$9\r\nSUBSCRIBE\r\n" + bulk(channel.encode()))

    def unsubscribe(self, channel: str) -> None:
        self._write(b"*2\r\n$11\r\nUNSUBSCRIBE\r\n" + bulk(channel.encode()))

    def _write(self, command: bytes) -> None:
        if self.transport is not None and not self.lost:
            self.transport.write(command)

    def _lose(self, exc: Exception) -> None:
        if not self.lost:
            self.lost = True
            if self.transport is not None:
                self.transport.close()
            self.on_failure(exc)

    async def aclose(self) -> None:
        self.lost = True
        connection = self.client.connection
        if connection is not None:  # nowait: its stream writer no longer hears the close
            await connection.disconnect(nowait=True)
        await self.client.aclose(close_connection_pool=True)


class _Pushes(asyncio.Protocol):
    """The listener's connection once subscribed: pushes parsed as they arrive."""

    def __init__(self, listener: Listener):
        self.listener = listener
        self.reader = hiredis.Reader()

    def data_received(self, data: bytes) -> None:
        reader, listener = self.reader, self.listener
        on_message, on_subscribed = listener.on_message, listener.on_subscribed
        try:
            reader.feed(data)
            while (push := reader.gets()) is not False:
                if not isinstance(push, list):  # an error reply (a refused command)
                    raise RedisConnectionError(f"pub/sub: {push}")
                kind = push[0]
                if kind == MESSAGE:
                    on_message(push[1], push[2])
                elif kind == SUBSCRIBED:
                    on_subscribed(push[1])
        except Exception as exc:  # the stream of pushes cannot be trusted past this
            log.exception("pub/sub message handling failed")
            listener._lose(exc)

    def connection_lost(self, exc: Exception | None) -> None:
        self.listener._lose(RedisConnectionError(f"pub/sub connection lost: {exc}"))
