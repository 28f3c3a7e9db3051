"""A web loop's pub/sub connection to the bus: it subscribes to the streams the loop relays
(each stream's key is its channel: the flush script publishes every entry it appends,
redis_append.py) and hands each message, and each confirmed subscription, to the reader
(redis_reader.py), which holds the streams' truth against them and opens a new listener
when one is lost.

The connection is opened with a protocol of our own (redis_dial.py: the URL's address,
TLS and credentials) that feeds hiredis from `data_received` and hands each message on
from there, and SUBSCRIBE and UNSUBSCRIBE are written to the transport as they come: no
task wakes per message or per command. Through redis-py's `read_response` per message
instead, the web spent 50.6-54.4 us per entry against the shared XREAD's 35.8-36.6
(bench/paced_web.py, 300 streams at 50 ms pacing, load 3.1-3.8); this way 34.6-35.4
against 40.6-41.9 in the next pair (2026-11-28).
"""
import asyncio
import logging

import hiredis
from redis.exceptions import ConnectionError as RedisConnectionError

from .redis_dial import command, dial, greeting, settings_of

log = logging.getLogger(__name__)

MESSAGE, SUBSCRIBED = b"message", b"subscribe"


class Listener:
    """One connection in subscribed mode, used once. `on_message(channel, data)` for every
    message, `on_subscribed(channel)` when a subscription is in force (what is published
    from then on reaches us), `on_lost(listener, exc, recoverable)` when the connection,
    once connected, is lost (`recoverable`: lost by the network or closed by Redis, e.g.
    at its `client-output-buffer-limit pubsub`; not: a refused command or a message we
    could not handle)."""

    def __init__(self, url: str, on_message, on_subscribed, on_lost):
        self.url = url
        self.on_message, self.on_subscribed, self.on_lost = on_message, on_subscribed, on_lost
        self.transport: asyncio.Transport | None = None
        self.connected = False  # greeted: subscriptions are written from then on
        self.closed = False

    async def connect(self, grace: float) -> None:
        """Open the connection and greet (each answer within `grace` seconds); raises why
        not (the connection is closed then)."""
        settings = settings_of(self.url)
        commands = greeting(settings)
        greeted = asyncio.get_running_loop().create_future()
        try:
            transport, _ = await dial(settings, lambda: _Pushes(self, len(commands), greeted))
            self.transport = transport
            transport.write(b"".join(commands))
            async with asyncio.timeout(grace):
                await greeted
        except (OSError, TimeoutError) as exc:  # refused, unreachable, TLS, no answer
            self.close()  # the callers' 503 (errors.is_backing_service_outage)
            raise RedisConnectionError(f"pub/sub connection to Redis failed: {exc!r}") from exc
        except BaseException:
            self.close()
            raise
        if self.closed:  # lost on the way (`greeted` was done already)
            raise RedisConnectionError("the pub/sub connection closed")
        self.connected = True

    def subscribe(self, channel: str) -> None:
        """Subscribe, if connected (the reader subscribes every held stream once it is)."""
        self._write(command(b"SUBSCRIBE", channel.encode()))

    def unsubscribe(self, channel: str) -> None:
        self._write(command(b"UNSUBSCRIBE", channel.encode()))

    def _write(self, data: bytes) -> None:
        if self.connected and not self.closed:
            self.transport.write(data)

    def close(self) -> None:
        """Close the connection without reporting it lost."""
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    def _lose(self, exc: Exception, recoverable: bool) -> None:
        if not self.closed:
            connected = self.connected
            self.close()
            if connected:  # before, `connect` raises
                self.on_lost(self, exc, recoverable)


class _Pushes(asyncio.Protocol):
    """The listener's connection: the greeting's answers, then pushes parsed as they
    arrive."""

    def __init__(self, listener: Listener, answers_due: int, greeted: asyncio.Future):
        self.listener = listener
        self.reader = hiredis.Reader()
        self.answers_due, self.greeted = answers_due, greeted

    def data_received(self, data: bytes) -> None:
        reader, listener = self.reader, self.listener
        on_message, on_subscribed = listener.on_message, listener.on_subscribed
        try:
            reader.feed(data)
            while self.answers_due:
                answer = reader.gets()
                if answer is False:
                    return
                if isinstance(answer, Exception):  # a wrong password, a server refusing
                    raise RedisConnectionError(f"pub/sub connection refused: {answer}")
                self.answers_due -= 1
                if not self.answers_due and not self.greeted.done():
                    self.greeted.set_result(None)
            while (push := reader.gets()) is not False:
                if not isinstance(push, list):  # an error reply (a refused command)
                    raise RedisConnectionError(f"pub/sub: {push}")
                kind = push[0]
                if kind == MESSAGE:
                    on_message(push[1], push[2])
                elif kind == SUBSCRIBED:
                    on_subscribed(push[1])
        except Exception as exc:  # the stream of pushes cannot be trusted past this
            if not self.greeted.done():
                self.greeted.set_exception(exc)
            else:
                log.exception("pub/sub message handling failed")
            listener._lose(exc, recoverable=False)

    def connection_lost(self, exc: Exception | None) -> None:
        lost = RedisConnectionError(f"pub/sub connection lost: {exc or 'closed by the server'}")
        if not self.greeted.done() and not self.listener.closed:  # `connect` waits for it
            self.greeted.set_exception(lost)
        self.listener._lose(lost, recoverable=True)
