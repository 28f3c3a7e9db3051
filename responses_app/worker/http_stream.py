"""A lean HTTP/1.1 client for the one request on the gateway's hot path: a POST whose
response body is streamed (the upstream's chat completion SSE).

An asyncio protocol around `httptools` (llhttp, the parser uvicorn uses), with an idle
keep-alive pool per origin. Under load (other responses streaming on the same loop) a
streamed body is read in batches: between reads the socket is paused, so the chunks that
arrive meanwhile come in one `recv` and cost one wake-up; alone, it is read as it arrives.
General-purpose clients pay per HTTP chunk (aiohttp's stream reader resumes the
transport and re-runs its parser for every one); this client pays per read. It does no redirects, proxies, cookies or content decoding (the
request asks for `identity`), none of which the upstream call uses.

Failures: `ConnectFailed` (no connection, or it closed before any response byte: safe to
send again; `ConnectTimeout` is one), `TimeoutError` (nothing from the server for the
idle timeout), `ConnectionLost` (the connection broke or sent bad HTTP after the response
started).
"""
import asyncio
import ssl
import time
from functools import lru_cache
from urllib.parse import urlsplit

import httptools

IDLE_KEEPALIVE_SECONDS = 15.0  # a pooled connection older than this is closed, not reused
MAX_IDLE_PER_ORIGIN = 256


class ConnectFailed(ConnectionError):
    """No response byte arrived: the request can safely be sent again."""


class ConnectTimeout(ConnectFailed, TimeoutError):
    """No connection within the connect timeout."""


class ConnectionLost(ConnectionError):
    """The connection failed after the response started."""


@lru_cache(maxsize=1)
def _tls_context() -> ssl.SSLContext:
    return ssl.create_default_context()


class _Target:
    """Where a URL points: its origin (the pool key), Host header and request path."""

    def __init__(self, url: str):
        parts = urlsplit(url)
        self.tls = parts.scheme == "https"
        self.host = parts.hostname or "localhost"
        default_port = 443 if self.tls else 80
        self.port = parts.port or default_port
        self.host_header = self.host if self.port == default_port else f"{self.host}:{self.port}"
        self.key = (parts.scheme, self.host, self.port)
        self.path = parts.path or "/"


class HttpClient:
    """Keep-alive connections of one event loop, per origin."""

    def __init__(self):
        self._idle: dict[tuple, list["_Connection"]] = {}
        self.streaming = 0  # responses returned and not yet released: the loop's load

    async def post(self, url: str, body: bytes, headers: dict, *, connect_timeout: float,
                   idle_timeout: float) -> "StreamedResponse":
        """Send the POST; the response once its head arrived (the body not yet read)."""
        target = _Target(url)
        head = [f"POST {target.path} HTTP/1.1", f"host: {target.host_header}",
                f"content-length: {len(body)}"]
        head += [f"{name}: {value}" for name, value in headers.items()]
        request = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body
        connection = self._reusable(target.key)
        if connection is None:
            connection = await _connect(target, connect_timeout)
        connection.send(request)
        try:
            async with asyncio.timeout(idle_timeout):
                await connection.head_received
        except BaseException:
            connection.close()
            raise
        self.streaming += 1
        return StreamedResponse(self, target.key, connection, idle_timeout)

    def _reusable(self, key) -> "_Connection | None":
        idle = self._idle.get(key)
        now = time.monotonic()
        while idle:
            connection = idle.pop()
            if connection.usable(now):
                return connection
            connection.close()
        return None

    def _keep(self, key, connection: "_Connection") -> None:
        idle = self._idle.setdefault(key, [])
        if len(idle) < MAX_IDLE_PER_ORIGIN:
            connection.idle_since = time.monotonic()
            idle.append(connection)
        else:
            connection.close()


async def _connect(target: _Target, timeout: float) -> "_Connection":
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(timeout):
            _, connection = await loop.create_connection(
                _Connection, target.host, target.port,
                ssl=_tls_context() if target.tls else None,
                server_hostname=target.host if target.tls else None)
    except TimeoutError:
        raise ConnectTimeout(f"no connection to {target.host}:{target.port} within "
                             f"{timeout:g} s") from None
    except OSError as exc:
        raise ConnectFailed(f"cannot connect to {target.host}:{target.port}: {exc}") from None
    return connection


class StreamedResponse:
    def __init__(self, client: HttpClient, key, connection: "_Connection", idle_timeout: float):
        self.client, self.key, self.connection = client, key, connection
        self.status: int = connection.status
        self.headers: dict[str, str] = connection.headers
        self.idle_timeout = idle_timeout
        self.paced = False  # see pace()
        self.released = False

    async def read(self) -> bytes:
        """The whole body (an error response's)."""
        parts = []
        async for data in self.batches():
            parts.append(data)
        return b"".join(parts)

    async def batches(self, read_interval: float = 0.0):
        """The body as it arrives: once `pace()` was called and while other responses
        stream on this client (under load), at most one piece per `read_interval` seconds;
        otherwise every piece as soon as it arrives (alone, nothing is held back).

        Pacing pauses the socket and sets a timer to resume it; the reader waits for the
        data that follows, so a paced read costs one wake-up of the reading task."""
        connection = self.connection
        loop = asyncio.get_running_loop()
        while True:
            if not connection.body:
                if connection.complete:
                    return
                await connection.body_arrived(self.idle_timeout)
                continue
            read_at = loop.time()
            data = b"".join(connection.body)
            connection.body.clear()
            yield data  # more may arrive meanwhile, even the end: the loop takes it next
            if (self.paced and read_interval > 0 and not connection.complete
                    and self.client.streaming > 1):
                wait = read_interval - (loop.time() - read_at)
                if wait > 0:
                    connection.pause_for(wait)

    def pace(self) -> None:
        """From now on, read at most once per read interval."""
        self.paced = True

    def release(self) -> None:
        """Back to the pool if the body was read whole and the server keeps it open."""
        if self.released:
            return
        self.released = True
        self.client.streaming -= 1
        connection = self.connection
        if connection.complete and connection.keep_alive and not connection.closed:
            connection.reset()
            self.client._keep(self.key, connection)
        else:
            connection.close()


class _Connection(asyncio.Protocol):
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
