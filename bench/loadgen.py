"""A CPU-cheap asyncio load generator for streaming (SSE) endpoints.

HTTP/1.1 is spoken by hand over ``asyncio.open_connection``: one request per connection,
``Connection: close``, the request bytes built once per target. Bodies may be chunked
(uvicorn, daphne) or close-delimited (or carry a Content-Length). While a request is timed
the client does as little as it can: it only looks for the first text delta and for the
final ``data: [DONE]``; every event is parsed and checked after the run (``verify``).

Two targets:

* ``direct``  -- ``POST {base}/chat/completions`` on the upstream (Chat Completions chunks);
* ``gateway`` -- ``POST {base}/responses`` on the gateway (Responses API events);
* ``chat``    -- ``POST {base}/chat/completions`` on the gateway (the direct body, with a key);
* ``socket``  -- the gateway's WebSocket mode: one socket per request, one ``response.create``
  (the Responses body, ``store: false``), its frames until ``response.completed``, then closed.
  Each frame is kept as the SSE block the same event would have been (``event:`` its type),
  with ``data: [DONE]`` after the last, so it is verified as a ``gateway`` stream is. Uses
  the ``websockets`` client: its CPU is the load generator's, not the gateway's.
"""
from __future__ import annotations

import asyncio
import math
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import orjson

DONE = b"data: [DONE]\n\n"
DELTA_EVENT = b"event: response.output_text.delta\n"
READ_SIZE = 65536


def expected_text(n: int) -> str:
    return "".join(f"w{i} " for i in range(n))


@dataclass
class Target:
    mode: str            # "direct" | "gateway" | "chat" | "socket"
    host: str
    port: int
    request: bytes       # the whole HTTP request, built once (socket: the create frame)
    n: int               # content chunks the model streams
    api_key: str | None = None  # socket: the handshake's key

    @classmethod
    def make(cls, mode: str, base_url: str, model: str, n: int, api_key: str | None = None) -> "Target":
        parts = urlsplit(base_url.rstrip("/"))
        if parts.hostname not in ("127.0.0.1", "localhost"):
            raise ValueError(f"refusing a non-local target: {base_url}")
        if mode in ("direct", "chat"):
            path = parts.path + "/chat/completions"
            body = {"model": model, "messages": [{"role": "user", "content": "hi"}], "stream": True,
                    "stream_options": {"include_usage": True}}
        elif mode == "gateway":
            path = parts.path + "/responses"
            body = {"model": model, "input": "hi", "stream": True}
        elif mode == "socket":
            frame = {"type": "response.create", "model": model, "input": "hi", "store": False}
            return cls(mode, parts.hostname, parts.port, orjson.dumps(frame), n, api_key)
        else:
            raise ValueError(mode)
        payload = orjson.dumps(body)
        lines = [f"POST {path} HTTP/1.1", f"Host: {parts.hostname}:{parts.port}",
                 "Content-Type: application/json", "Accept: text/event-stream",
                 f"Content-Length: {len(payload)}", "Connection: close"]
        if api_key:
            lines.append(f"Authorization: Bearer {api_key}")
        request = ("\r\n".join(lines) + "\r\n\r\n").encode() + payload
        return cls(mode, parts.hostname, parts.port, request, n)


@dataclass
class Result:
    t_start: float                  # perf_counter() when the connection was opened
    ttfd: float | None = None       # seconds to the first text delta
    total: float | None = None      # seconds to `data: [DONE]`
    ok: bool = False                # transport-level success: 200 and `[DONE]` seen
    error: str | None = None        # why not ok
    lost: str | None = None         # why verification failed (set by `verify`)
    status: int | None = None
    framing: str | None = None      # "chunked" | "length" | "close"
    body: bytes = field(default=b"", repr=False)

    def as_dict(self) -> dict:
        return {"t_start": self.t_start, "ttfd": self.ttfd, "total": self.total, "ok": self.ok,
                "error": self.error, "lost": self.lost, "status": self.status, "framing": self.framing}


class _Chunked:
    """Incremental decoder for `Transfer-Encoding: chunked`."""

    __slots__ = ("buf", "left", "skip", "done")

    def __init__(self) -> None:
        self.buf = b""
        self.left = 0      # payload bytes left in the current chunk
        self.skip = 0      # CRLF bytes left after the current chunk
        self.done = False  # the last (zero-size) chunk was seen

    def feed(self, data: bytes) -> bytes:
        buf = self.buf + data if self.buf else data
        out = []
        pos, end = 0, len(buf)
        while pos < end and not self.done:
            if self.left:
                take = min(self.left, end - pos)
                out.append(buf[pos:pos + take])
                pos += take
                self.left -= take
            elif self.skip:
                take = min(self.skip, end - pos)
                pos += take
                self.skip -= take
            else:
                eol = buf.find(b"\r\n", pos)
                if eol < 0:
                    break
                size = int(buf[pos:eol].split(b";", 1)[0], 16)
                pos = eol + 2
                if size == 0:
                    self.done = True
                else:
                    self.left, self.skip = size, 2
        self.buf = buf[pos:] if pos < end else b""
        return out[0] if len(out) == 1 else b"".join(out)


def _parse_head(head: bytes) -> tuple[int, dict]:
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    return status, headers


def _first_direct_delta(buf: bytes) -> bool:
    """True when a complete block of `buf` is a chunk with non-empty delta content."""
    for block in buf.split(b"\n\n")[:-1]:
        if block.startswith(b"data: {"):
            try:
                choices = orjson.loads(block[6:]).get("choices") or ()
            except orjson.JSONDecodeError:
                continue
            if choices and (choices[0].get("delta") or {}).get("content"):
                return True
    return False


def _first_gateway_delta(buf: bytes) -> bool:
    at = buf.find(DELTA_EVENT)
    return at >= 0 and buf.find(b"\n\n", at) >= 0


async def fetch(target: Target, timeout: float) -> Result:
    """One request; never raises (except on cancellation)."""
    if target.mode == "socket":
        return await fetch_socket(target, timeout)
    clock = time.perf_counter
    result = Result(t_start=clock())
    writer = None
    first_delta = _first_gateway_delta if target.mode == "gateway" else _first_direct_delta
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(target.host, target.port, limit=READ_SIZE)
            writer.write(target.request)
            head = await reader.readuntil(b"\r\n\r\n")
            status, headers = _parse_head(head)
            result.status = status
            chunked = "chunked" in headers.get("transfer-encoding", "").lower()
            length = None if chunked else headers.get("content-length")
            result.framing = "chunked" if chunked else ("length" if length is not None else "close")
            if status != 200:
                body = await (reader.readexactly(int(length)) if length is not None else reader.read(8192))
                if chunked:
                    body = _Chunked().feed(body)
                result.error = f"http_{status}: {body[:200].decode('utf-8', 'replace')}"
                return result
            decoder = _Chunked() if chunked else None
            remaining = int(length) if length is not None else -1
            parts: list[bytes] = []
            scan = b""        # the body so far, kept only until the first delta is found
            tail = b""
            while True:
                data = await reader.read(READ_SIZE)
                if not data:
                    break
                if remaining >= 0:
                    remaining -= len(data)
                if decoder is not None:
                    data = decoder.feed(data)
                if data:
                    parts.append(data)
                    if result.ttfd is None:
                        scan += data
                        if first_delta(scan):
                            result.ttfd = clock() - result.t_start
                            scan = b""
                    tail = (tail + data)[-len(DONE):]
                    if tail == DONE:
                        result.total = clock() - result.t_start
                        result.ok = True
                        break
                if (decoder is not None and decoder.done) or remaining == 0:
                    break
            result.body = b"".join(parts)
            if not result.ok:
                result.error = "incomplete: body ended before [DONE]"
    except TimeoutError:
        result.error = "timeout"
    except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as exc:
        result.error = f"{type(exc).__name__}: {exc}"[:200]
    finally:
        if writer is not None:
            writer.close()
    return result


async def fetch_socket(target: Target, timeout: float) -> Result:
    """One response on a WebSocket of its own; never raises (except on cancellation)."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import WebSocketException

    clock = time.perf_counter
    result = Result(t_start=clock(), framing="websocket")
    parts: list[bytes] = []
    try:
        async with asyncio.timeout(timeout):
            async with connect(f"ws://{target.host}:{target.port}/v1/responses",
                               additional_headers={"Authorization": f"Bearer {target.api_key}"},
                               max_size=None, ping_interval=None, compression=None) as socket:
                result.status = 101
                await socket.send(target.request.decode())
                while True:
                    frame = await socket.recv(decode=False)
                    kind = frame[9:frame.index(b'"', 9)] if frame.startswith(b'{"type":"') else b"?"
                    parts.append(b"event: %s\ndata: %s\n\n" % (kind, frame))
                    if result.ttfd is None and kind == b"response.output_text.delta":
                        result.ttfd = clock() - result.t_start
                    if kind in (b"response.completed", b"response.failed",
                                b"response.incomplete", b"error"):
                        break
                result.total = clock() - result.t_start
                result.ok = kind != b"error"
                if not result.ok:
                    result.error = f"error_frame: {frame[:200].decode('utf-8', 'replace')}"
                parts.append(DONE)
    except TimeoutError:
        result.error = "timeout"
    except (OSError, WebSocketException, ValueError) as exc:
        result.error = f"{type(exc).__name__}: {exc}"[:200]
    result.body = b"".join(parts)
    return result


# --------------------------------------------------------------------------- verification


def _blocks(body: bytes):
    """(event name or None, data bytes or None) for each SSE block."""
    for block in body.split(b"\n\n"):
        if not block:
            continue
        event = data = None
        for line in block.split(b"\n"):
            if line.startswith(b"data:"):
                value = line[5:].lstrip(b" ")
                data = value if data is None else data + b"\n" + value
            elif line.startswith(b"event:"):
                event = line[6:].strip()
        yield event, data


def verify_gateway(body: bytes, n: int) -> str | None:
    """None if every event arrived, in order: sequence numbers 0..k-1, response.created
    first, n text deltas with the expected text, a terminal response.completed last and
    then [DONE]; else the reason."""
    seq = 0
    deltas = []
    last_type = None
    last: dict = {}
    done = False
    for event, data in _blocks(body):
        if data is None:
            continue  # comment (keep-alive)
        if done:
            return "data after [DONE]"
        if data == b"[DONE]":
            done = True
            continue
        try:
            obj = orjson.loads(data)
        except orjson.JSONDecodeError:
            return f"bad JSON at sequence {seq}"
        if obj.get("sequence_number") != seq:
            return f"sequence_number {obj.get('sequence_number')} where {seq} expected"
        seq += 1
        kind = obj.get("type")
        if seq == 1 and kind != "response.created":
            return f"first event {kind}, not response.created"
        if event is not None and event.decode() != kind:
            return f"event name {event!r} != type {kind!r}"
        if kind == "response.output_text.delta":
            deltas.append(obj.get("delta", ""))
        last_type = kind
        last = obj
    if not done:
        return "no [DONE]"
    if last_type in ("response.failed", "response.incomplete", "error"):
        error = (last.get("response") or {}).get("error") or last.get("error") or last
        return f"{last_type}: {error.get('code')}: {str(error.get('message'))[:80]}"
    if len(deltas) != n:
        return f"{len(deltas)} text deltas, {n} expected"
    if "".join(deltas) != expected_text(n):
        return "delta text differs"
    if last_type != "response.completed":
        return f"last event {last_type}, not response.completed"
    return None


def verify_direct(body: bytes, n: int) -> str | None:
    contents = []
    done = False
    for _, data in _blocks(body):
        if data is None:
            continue
        if done:
            return "data after [DONE]"
        if data == b"[DONE]":
            done = True
            continue
        try:
            obj = orjson.loads(data)
        except orjson.JSONDecodeError:
            return "bad JSON chunk"
        choices = obj.get("choices") or ()
        if choices:
            content = (choices[0].get("delta") or {}).get("content")
            if content:
                contents.append(content)
    if not done:
        return "no [DONE]"
    if len(contents) != n:
        return f"{len(contents)} content deltas, {n} expected"
    if "".join(contents) != expected_text(n):
        return "content text differs"
    return None


def verify(target: Target, results: list[Result], keep_bodies: bool = False) -> None:
    """Set `lost` on every ok result whose events do not check out; drop the other bodies."""
    check = (verify_gateway if target.mode in ("gateway", "socket")
             else verify_direct)  # chat: direct's
    for r in results:
        if r.ok:
            r.lost = check(r.body, target.n)
        if not keep_bodies and r.lost is None:
            r.body = b""  # bodies with lost events stay, for the report's samples


# --------------------------------------------------------------------------- a run


@dataclass
class Run:
    target: Target
    concurrency: int
    total: int
    results: list[Result]
    wall: float            # seconds from first start to last end
    skipped: int           # requests never issued (wall-clock cap)
    client_cpu: float      # seconds of this process's CPU during the run

    def summary(self) -> dict:
        ok = [r for r in self.results if r.ok]
        good = [r for r in ok if r.lost is None]
        errors = [r for r in self.results if not r.ok]
        ttfd = sorted(r.ttfd for r in ok if r.ttfd is not None)
        total = sorted(r.total for r in ok)
        kinds: dict[str, int] = {}
        for r in errors:
            kinds[r.error.split(":", 1)[0]] = kinds.get(r.error.split(":", 1)[0], 0) + 1
        lost_kinds: dict[str, int] = {}
        for r in ok:
            if r.lost is not None:
                lost_kinds[r.lost] = lost_kinds.get(r.lost, 0) + 1
        return {
            "mode": self.target.mode, "concurrency": self.concurrency, "requested": self.total,
            "issued": len(self.results), "skipped": self.skipped, "ok": len(ok), "good": len(good),
            "errors": len(errors) + self.skipped, "error_kinds": kinds,
            "lost": len(ok) - len(good), "lost_kinds": lost_kinds,
            "wall_s": self.wall, "rps": len(ok) / self.wall if self.wall > 0 else 0.0,
            "ttfd_p50_ms": _ms(percentile(ttfd, 50)), "ttfd_p99_ms": _ms(percentile(ttfd, 99)),
            "total_p50_ms": _ms(percentile(total, 50)), "total_p99_ms": _ms(percentile(total, 99)),
            "client_cpu_ms_per_resp": 1000 * self.client_cpu / len(self.results) if self.results else None,
            "framing": sorted({r.framing for r in self.results if r.framing}),
        }


def percentile(values: list[float], p: float) -> float | None:
    """Nearest-rank percentile of sorted `values`."""
    if not values:
        return None
    return values[max(0, math.ceil(p / 100 * len(values)) - 1)]


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1000


async def run_load(target: Target, concurrency: int, total: int, *, max_seconds: float = 120.0,
                   request_timeout: float = 60.0, keep_bodies: bool = False,
                   ramp_seconds: float = 0.0) -> Run:
    """`concurrency` workers issue requests back to back until `total` were issued or
    `max_seconds` passed; a request in flight at the cap times out. Verifies afterwards.

    With `ramp_seconds`, worker i starts i/concurrency of it late: the workers' requests are
    spread over time from the start, as independent clients' are, rather than all sent at
    one instant and kept in step."""
    clock = time.perf_counter
    results: list[Result] = []
    issued = 0
    start = clock()
    deadline = start + max_seconds
    cpu0 = time.process_time()

    async def worker(index: int) -> None:
        nonlocal issued
        await asyncio.sleep(ramp_seconds * index / concurrency)
        while issued < total:
            left = deadline - clock()
            if left <= 0:
                return
            issued += 1
            results.append(await fetch(target, min(request_timeout, left)))

    await asyncio.gather(*(worker(index) for index in range(min(concurrency, total))))
    client_cpu = time.process_time() - cpu0
    wall = clock() - start
    verify(target, results, keep_bodies)
    return Run(target, concurrency, total, results, wall, total - issued, client_cpu)
