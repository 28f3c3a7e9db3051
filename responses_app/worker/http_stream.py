"""A lean HTTP/1.1 client for the one request on the gateway's hot path: a POST whose
response body is streamed (the upstream's chat completion SSE). It stands where aiohttp
(or httpx) would; it is kept because its measured saving per response, paired against
aiohttp in the benchmark, is well over the bar: worker CPU 5.0-5.1 vs 6.5-7.5 ms per
response at c=100, 5 ms, ~22% of all-in (2026-11-25, 96c40f5; docs/architecture.md's
ledger says when it goes back).

An asyncio protocol around `httptools` (llhttp), with an idle keep-alive pool per origin.
Under load (other responses streaming on the same loop) a streamed body is read in
batches: between reads the socket is paused, so the chunks that arrive meanwhile come in
one `recv` and cost one wake-up; alone, it is read as it arrives. A general-purpose client
pays per HTTP chunk (aiohttp's stream reader resumes the transport and re-runs its parser
for every one); this one pays per read. No redirects, proxies, cookies or content decoding
(the request asks for `identity`): the upstream call uses none of them.

Issue 31 (2026-11-27, paired rounds at 50:300:600 against 58083d9, bench/README.md): with
the bus flush packed by hand, the worker's CPU per 50 ms-paced response fell 0.77-0.81x;
of it, reading a slow stream without pausing (see `batches`) and one idle timer per
connection: 14.0 vs 15.0 ms worker CPU per response against the same code that pauses.

With tick reads (tick_reads.py, STREAM_TICK_READS), a paced stream under load is not
paused per read: it is taken off the loop's watch and read by the loop's pass once a flush
tick, with every other such stream.

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

from .http_connection import (ConnectFailed, ConnectionLost, ConnectTimeout,  # noqa: F401
                              Connection)
from .tick_reads import TickReads

MAX_IDLE_PER_ORIGIN = 256
# A read of one piece that came this share of the read interval or more after the one
# before is not followed by a pause (batches()): a stream paced at the interval arrives
# around it, half the time a little early (issue 31, 2026-11-27: at 50 ms pacing 55% of
# the reads paused with 1.0, each a pause, a timer and a resume that gathered nothing).
SLOW_SHARE = 0.75


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

    def __init__(self, tick: float = 0.0, after_pass=None):
        self._idle: dict[tuple, list["Connection"]] = {}
        self.tick_reads = TickReads(tick, after_pass) if tick > 0 else None
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

    def close(self) -> None:
        """Close the pooled idle connections (a loop that is about to end)."""
        for idle in self._idle.values():
            for connection in idle:
                connection.close()
        self._idle.clear()

    def _reusable(self, key) -> "Connection | None":
        idle = self._idle.get(key)
        now = time.monotonic()
        while idle:
            connection = idle.pop()
            if connection.usable(now):
                return connection
            connection.close()
        return None

    def _keep(self, key, connection: "Connection") -> None:
        idle = self._idle.setdefault(key, [])
        if len(idle) < MAX_IDLE_PER_ORIGIN:
            connection.idle_since = time.monotonic()
            idle.append(connection)
        else:
            connection.close()


async def _connect(target: _Target, timeout: float) -> "Connection":
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(timeout):
            _, connection = await loop.create_connection(
                Connection, target.host, target.port,
                ssl=_tls_context() if target.tls else None,
                server_hostname=target.host if target.tls else None)
    except TimeoutError:
        raise ConnectTimeout(f"no connection to {target.host}:{target.port} within "
                             f"{timeout:g} s") from None
    except OSError as exc:
        raise ConnectFailed(f"cannot connect to {target.host}:{target.port}: {exc}") from None
    return connection


class StreamedResponse:
    def __init__(self, client: HttpClient, key, connection: "Connection", idle_timeout: float):
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
        data that follows, so a paced read costs one wake-up of the reading task. A read
        of one piece that came about an interval or more after the one before (a stream
        as slow as the interval, or slower: a model's pace of 20 tokens a second;
        `SLOW_SHARE`) is not followed by a pause, which would hold nothing back and cost a
        timer, a callback and the socket's pause and resume per chunk (see the module's
        docstring)."""
        connection = self.connection
        loop = asyncio.get_running_loop()
        previous_read_at = -read_interval
        while True:
            body = connection.body
            if not body:
                if connection.complete:
                    return
                await connection.body_arrived(self.idle_timeout)
                continue
            read_at = loop.time()
            data, single = _taken(body)
            yield data  # more may arrive meanwhile, even the end: the loop takes it next
            self._paced_read(read_interval, read_at, previous_read_at, single)
            previous_read_at = read_at

    async def deliver(self, sink, read_interval: float = 0.0) -> None:
        """The rest of the body, each read handed to `sink(data)` from the connection's
        read callback, paced as `batches()` is; returns once the body is complete or
        `sink` returned true (it wants no more), and raises what `sink` raised, a timeout
        (nothing for the idle timeout) or the connection's failure.

        A read costs no wake-up of the waiting task, no future and no generator step: the
        task wakes at the end only. Issue 31 (2026-11-27, bench/README.md's "Round 2
        (worker)"): with it, the worker's streaming loop alone 0.76-0.92x the CPU per
        50 ms-paced chunk (median 0.82x, 8 pairs); the benchmark's worker 0.70-0.79x per
        response in the pairs the machine held."""
        connection = self.connection
        loop = connection.loop
        previous_read_at = -read_interval
        outcome: list = []  # [None] once sink said it is done, or [what it raised]

        def read() -> None:
            nonlocal previous_read_at
            body = connection.body
            read_at = loop.time()
            connection.wait_deadline = read_at + self.idle_timeout
            data, single = _taken(body)
            try:
                done, failure = sink(data), None
            except BaseException as exc:  # the waiting task raises it
                done, failure = True, exc
            if done:
                outcome.append(failure)
                connection.reader = None
                connection._wake()
                return
            self._paced_read(read_interval, read_at, previous_read_at, single)
            previous_read_at = read_at

        connection.reader = read
        try:
            if connection.body:
                read()
            while not outcome and not connection.complete:
                await connection.body_arrived(self.idle_timeout)
        finally:
            connection.reader = None
        if outcome and outcome[0] is not None:
            raise outcome[0]

    def _paced_read(self, read_interval: float, read_at: float, previous_read_at: float,
                    single: bool) -> None:
        """After a read: when pacing applies (see batches()), hand the connection to the
        loop's tick reads (tick_reads.py), read by their pass from the interval's last tick
        on; without them, pause the socket for the rest of the interval."""
        connection = self.connection
        if not (self.paced and read_interval > 0 and not connection.complete
                and self.client.streaming > 1):
            connection.untick()
            return
        reads = self.client.tick_reads
        if reads is not None:
            connection.read_after = read_at + read_interval - reads.tick
            connection.tick(reads)
        elif not (single and read_at - previous_read_at >= read_interval * SLOW_SHARE):
            wait = read_interval - (connection.loop.time() - read_at)
            if wait > 0:
                connection.pause_for(wait)

    def pace(self) -> None:
        """From now on, read at most once per read interval."""
        self.paced = True

    def unpace(self) -> None:
        """From now on, read every piece as soon as it arrives."""
        self.paced = False
        self.connection.untick()

    def release(self) -> None:
        """Back to the pool if the body was read whole and the server keeps it open."""
        if self.released:
            return
        self.released = True
        self.client.streaming -= 1
        connection = self.connection
        connection.untick()
        if connection.complete and connection.keep_alive and not connection.closed:
            connection.reset()
            self.client._keep(self.key, connection)
        else:
            connection.close()


def _taken(body: list) -> tuple[bytes, bool]:
    """The body pieces read so far, joined (no copy for one) and cleared: (the data,
    whether it was one piece)."""
    single = len(body) == 1
    data = body[0] if single else b"".join(body)
    body.clear()
    return data, single
