"""A lean OpenAI-compatible upstream for the benchmark: `bench-<n>-<ms>` models, and
`fake-tool-loop-<n>` (the agent-loop scenario: its answer depends on the conversation).

The benchmark measures the gateway, so the upstream must cost as little CPU as possible on
this shared 2-core machine: a raw asyncio protocol (uvloop when installed), chunks encoded
once per model, and one timer for all streams (each stream's next chunk is written when due,
on a fixed schedule). Speaks just enough HTTP/1.1: POST with Content-Length, chunked reply,
keep-alive.

    python -m bench.upstream --port 8901      # prints READY <port>
"""
import argparse
import asyncio
import heapq
import itertools

import orjson

from tests.upstream_scenarios import scenario_for

HEAD = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
        b"transfer-encoding: chunked\r\n\r\n")
NOT_FOUND = b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n"
_frames: dict = {}


def frames_for(model: str) -> tuple[list[bytes], float]:
    """Each chunk as one HTTP chunk of `data: …\\n\\n`, then [DONE] and the last chunk."""
    cached = _frames.get(model)
    if cached is None:
        scenario = scenario_for(model, {})
        frames = [_chunk(b"data: " + orjson.dumps(c) + b"\n\n") for c in scenario.chunks]
        frames.append(_chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
        cached = _frames[model] = (frames, scenario.pacing)
    return cached


def frames_of(model: str, body: dict) -> tuple[list[bytes], float]:
    """The frames answering this request: cached per model, unless the answer depends on
    the conversation (a tool loop counts the tool results it was sent)."""
    if not model.startswith("fake-tool-loop-"):
        return frames_for(model)
    scenario = scenario_for(model, body)
    frames = [_chunk(b"data: " + orjson.dumps(c) + b"\n\n") for c in scenario.chunks]
    frames.append(_chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
    return frames, scenario.pacing


def _chunk(payload: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(payload), payload)


class Scheduler:
    """One timer for every stream: writes each stream's next frame when it is due."""

    def __init__(self, loop):
        self.loop = loop
        self.heap: list = []
        self.counter = itertools.count()
        self.timer = None
        self.timer_at = None
        self.running = False

    def add(self, when: float, stream) -> None:
        heapq.heappush(self.heap, (when, next(self.counter), stream))
        if not self.running:
            self._schedule()

    def _schedule(self) -> None:
        when = self.heap[0][0]
        if self.timer is not None and self.timer_at <= when:
            return
        if self.timer is not None:
            self.timer.cancel()
        self.timer, self.timer_at = self.loop.call_at(when, self.run), when

    def run(self) -> None:
        self.timer = self.timer_at = None
        self.running = True
        now = self.loop.time()
        while self.heap and self.heap[0][0] <= now:
            _, _, stream = heapq.heappop(self.heap)
            stream.step(now)
        self.running = False
        if self.heap:
            self._schedule()


class Stream:
    def __init__(self, protocol, frames, pacing, scheduler):
        self.protocol, self.frames, self.pacing = protocol, frames, pacing
        self.scheduler, self.index = scheduler, 0
        self.start = scheduler.loop.time()

    def step(self, now: float) -> None:
        transport = self.protocol.transport
        if transport is None or transport.is_closing():
            return
        if self.pacing <= 0:
            transport.write(b"".join(self.frames[self.index:]))
            self.index = len(self.frames)
        else:
            transport.write(self.frames[self.index])
            self.index += 1
        if self.index < len(self.frames):
            self.scheduler.add(self.start + self.index * self.pacing, self)
        else:
            self.protocol.stream_done()


class UpstreamProtocol(asyncio.Protocol):
    def __init__(self, scheduler):
        self.scheduler = scheduler
        self.transport = None
        self.buffer = b""

    def connection_made(self, transport):
        self.transport = transport

    def connection_lost(self, exc):
        self.transport = None

    def data_received(self, data):
        self.buffer += data
        head_end = self.buffer.find(b"\r\n\r\n")
        if head_end < 0:
            return
        head = self.buffer[:head_end].decode("latin-1")
        length = 0
        for line in head.split("\r\n")[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value)
        if len(self.buffer) < head_end + 4 + length:
            return
        body = self.buffer[head_end + 4:head_end + 4 + length]
        self.buffer = self.buffer[head_end + 4 + length:]
        if not head.startswith("POST /v1/chat/completions"):
            self.transport.write(NOT_FOUND)
            return
        request = orjson.loads(body)
        frames, pacing = frames_of(request["model"], request)
        self.transport.write(HEAD)
        Stream(self, frames, pacing, self.scheduler).step(self.scheduler.loop.time())

    def stream_done(self):
        if self.buffer:
            self.data_received(b"")


async def serve(port: int) -> None:
    loop = asyncio.get_running_loop()
    scheduler = Scheduler(loop)
    server = await loop.create_server(lambda: UpstreamProtocol(scheduler), "127.0.0.1", port)
    print(f"READY {server.sockets[0].getsockname()[1]}", flush=True)
    await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    try:
        import uvloop
        uvloop.install()
    except ImportError:
        pass
    asyncio.run(serve(args.port))


if __name__ == "__main__":
    main()
