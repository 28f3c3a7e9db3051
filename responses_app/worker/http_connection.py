"""One HTTP/1.1 connection of the lean upstream client (http_stream.py): an asyncio
protocol around `httptools` (llhttp) that parses a response head and queues its body,
and the failures the client raises."""
import asyncio

import httptools

IDLE_KEEPALIVE_SECONDS = 15.0  # a pooled connection older than this is closed, not reused


class ConnectFailed(ConnectionError):
    """No response byte arrived: the request can safely be sent again."""


class ConnectTimeout(ConnectFailed, TimeoutError):
    """No connection within the connect timeout."""


class ConnectionLost(ConnectionError):
    """The connection failed after the response started."""


class Connection(asyncio.Protocol):
    """One HTTP/1.1 connection: one request at a time, its response parsed as it comes."""

    def __init__(self):
        self.transport = None
        self.closed = False
        self.idle_since = 0.0
        self.resume_timer: asyncio.TimerHandle | None = None
        self.reset()

    def reset(self) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self.head_received = asyncio.get_running_loop().create_future()
        self.status = 0
        self.headers: dict[str, str] = {}
        self.body: list[bytes] = []
        self.complete = False
        self.keep_alive = False
        self.started = False  # a response byte arrived
        self.waiter: asyncio.Future | None = None
        self.failure: Exception | None = None

    def usable(self, now: float) -> bool:
        return (not self.closed and now - self.idle_since < IDLE_KEEPALIVE_SECONDS
                and not self.transport.is_closing())

    # --- the request side ----------------------------------------------------------------
    def send(self, request: bytes) -> None:
        self.transport.write(request)

    async def body_arrived(self, timeout: float) -> None:
        """Wait for more of the body (or its end); TimeoutError after `timeout` seconds
        without a byte (a paused socket's pause counts: it is far shorter)."""
        if self.failure is not None:
            raise self.failure
        loop = asyncio.get_running_loop()
        waiter = self.waiter = loop.create_future()
        timer = loop.call_later(timeout, _time_out, waiter)
        try:
            await waiter
        finally:
            self.waiter = None
            timer.cancel()

    def pause_for(self, seconds: float) -> None:
        """Stop reading the socket for `seconds`: what arrives meanwhile waits in the
        kernel and comes in one read."""
        if not self.closed:
            self.transport.pause_reading()
            self.resume_timer = asyncio.get_running_loop().call_later(seconds, self.resume)

    def resume(self) -> None:
        self.resume_timer = None
        if not self.closed and not self.transport.is_closing():
            self.transport.resume_reading()

    def close(self) -> None:
        if self.resume_timer is not None:
            self.resume_timer.cancel()
            self.resume_timer = None
        if not self.closed:
            self.closed = True
            self.transport.close()

    # --- asyncio protocol --------------------------------------------------------------------
    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.started = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(ConnectionLost(f"the upstream sent invalid HTTP: {exc}"))
            self.close()

    def eof_received(self):
        return False  # close the transport; connection_lost follows

    def connection_lost(self, exc) -> None:
        self.closed = True
        if self.complete:
            return
        if self.head_received.done() and not self._framed():  # the close ends the body
            self.complete = True
            self._wake()
        else:
            if not self.started:
                self._fail(ConnectFailed("the upstream closed the connection before answering"))
            else:
                self._fail(ConnectionLost("the upstream closed the connection"))

    def _framed(self) -> bool:
        return "content-length" in self.headers or "transfer-encoding" in self.headers

    # --- parser callbacks ----------------------------------------------------------------
    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()
        self.keep_alive = self.parser.should_keep_alive()
        if not self.head_received.done():
            self.head_received.set_result(None)

    def on_body(self, body: bytes) -> None:
        self.body.append(body)
        self._wake()

    def on_message_complete(self) -> None:
        self.complete = True
        self.keep_alive = self.parser.should_keep_alive()
        self._wake()

    def _wake(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    def _fail(self, failure: Exception) -> None:
        self.failure = failure
        if not self.head_received.done():
            self.head_received.set_exception(failure)
            self.head_received.exception()  # retrieved: no "never retrieved" warning
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(failure)


def _time_out(waiter: asyncio.Future) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError())
