"""One HTTP/1.1 connection of the lean upstream client (http_stream.py): an asyncio
protocol around `httptools` (llhttp) that parses a response head and queues its body,
and the failures the client raises."""
import asyncio
import os

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
        self.idle_timer: asyncio.TimerHandle | None = None
        self.wait_deadline = 0.0
        self.ticking = None  # the loop's TickReads while the pass reads this connection
        self.fd = -1
        self.read_after = 0.0  # the pass reads it from this loop time on
        self.loop = asyncio.get_running_loop()
        self.reset()

    def reset(self) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self.head_received = self.loop.create_future()
        self.status = 0
        self.headers: dict[str, str] = {}
        self.body: list[bytes] = []
        self.complete = False
        self.keep_alive = False
        self.started = False  # a response byte arrived
        self.waiter: asyncio.Future | None = None
        self.failure: Exception | None = None
        # called after each read that added to `body` (StreamedResponse.deliver); while it
        # is set, a body piece wakes no waiter (only the end, a failure or the idle timeout)
        self.reader = None

    def usable(self, now: float) -> bool:
        return (not self.closed and now - self.idle_since < IDLE_KEEPALIVE_SECONDS
                and not self.transport.is_closing())

    # --- the request side ----------------------------------------------------------------
    def send(self, request: bytes) -> None:
        self.transport.write(request)

    async def body_arrived(self, timeout: float) -> None:
        """Wait for more of the body (or its end); TimeoutError after `timeout` seconds
        without a byte (a paused socket's pause counts: it is far shorter).

        One idle timer per connection, not one per wait: when it fires it times out the
        wait in progress if that wait is `timeout` old, else it is set again for when it
        will be (a timer made and cancelled per read, for every 50 ms-paced chunk; the
        gain is in http_stream's docstring)."""
        if self.failure is not None:
            raise self.failure
        loop = self.loop
        waiter = self.waiter = loop.create_future()
        self.wait_deadline = loop.time() + timeout
        if self.idle_timer is None:
            self.idle_timer = loop.call_at(self.wait_deadline, self._idle_check)
        try:
            await waiter
        finally:
            self.waiter = None

    def _idle_check(self) -> None:
        self.idle_timer = None
        waiter = self.waiter
        if waiter is None or waiter.done():
            return  # no wait in progress: the next one sets the timer
        if self.loop.time() >= self.wait_deadline:
            waiter.set_exception(TimeoutError())
        else:
            self.idle_timer = self.loop.call_at(self.wait_deadline, self._idle_check)

    def pause_for(self, seconds: float) -> None:
        """Stop reading the socket for `seconds`: what arrives meanwhile waits in the
        kernel and comes in one read."""
        if not self.closed:
            self.transport.pause_reading()
            self.resume_timer = self.loop.call_later(seconds, self.resume)

    def resume(self) -> None:
        self.resume_timer = None
        if not self.closed and not self.transport.is_closing():
            self.transport.resume_reading()

    def tick(self, reads) -> None:
        """From now on the loop's tick pass reads this connection (tick_reads.py); not a
        TLS one (its bytes need the transport's decryption)."""
        transport = self.transport
        if self.ticking is not None or self.closed or transport.is_closing():
            return
        sock = transport.get_extra_info("socket")
        if sock is None or transport.get_extra_info("sslcontext") is not None:
            return
        if self.resume_timer is not None:
            self.resume_timer.cancel()
            self.resume_timer = None
        self.fd = sock.fileno()
        transport.pause_reading()
        self.ticking = reads
        reads.add(self)

    def untick(self) -> None:
        """Back to reading as bytes arrive."""
        if self._off_the_pass() and not self.closed and not self.transport.is_closing():
            self.transport.resume_reading()

    def _off_the_pass(self) -> bool:
        """Leave the tick pass's connections; whether this one was among them."""
        if self.ticking is None:
            return False
        self.ticking.discard(self)
        self.ticking = None
        return True

    def tick_read(self) -> None:
        """The tick pass: what the kernel holds, taken as the transport would; an end or a
        failure is left to the transport (resumed), which reports it as it always does."""
        try:
            data = os.read(self.fd, 262144)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            self.data_received(data)
        else:
            self.untick()

    def close(self) -> None:
        self._off_the_pass()
        for timer in (self.resume_timer, self.idle_timer):
            if timer is not None:
                timer.cancel()
        self.resume_timer = self.idle_timer = None
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
            return
        if self.reader is not None and self.body:
            self.reader()

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
        waiter = self.waiter  # _wake(), inline: once per HTTP chunk
        if waiter is not None and self.reader is None and not waiter.done():
            waiter.set_result(None)

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

