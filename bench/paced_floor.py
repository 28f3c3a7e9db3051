"""The floor of a paced chunk's CPU in this stack (issue 31): the per-chunk I/O alone.

    .venv/bin/python -m bench.paced_floor [--streams 300] [--pacing 50] [--seconds 12]
                                          [--relay xread|pubsub] [--work none|minimal]

What no Python gateway with a Redis bus between its workers and its web can avoid per
streamed chunk, and nothing else: a worker process (uvloop) holds `--streams` upstream
connections and, per chunk, takes one socket read's bytes in a protocol callback; every
10 ms it appends what came to the streams' Redis keys in one write (`XADD` per chunk; with
`--relay pubsub` also a `PUBLISH`); a web process (uvloop) relays each entry to a client
socket of its own, one `send` per entry, either by a shared `XREAD` of every stream every
20 ms (`xread`, as main's web reads) or by one pub/sub connection (`pubsub`). Redis replies
are parsed by hiredis. `--work minimal` adds the least honest translation per chunk: the
SSE payload cut out of its chunked framing, decoded (orjson), one delta event encoded
(orjson), and SSE framing at the web; `none` forwards the raw bytes. No tasks per chunk,
no database, no response start or end.

A child process plays the upstream (each connection a chunk of a real Chat Completions
stream's shape every `--pacing` ms, starts spread over one interval), another drains the
client sockets; neither is counted. Prints each measured process's CPU (user + system,
getrusage in the process) and the Redis server's (INFO cpu: a server of the bench's own)
per chunk, over the middle of the run (the first two seconds and the last one left out),
and per 200-chunk response, to set beside `make bench`'s all-in per response of the same
hour: what part of it is the stack's floor and what part is the gateway's own work.

Redis: `TEST_REDIS_URL` (default 127.0.0.1:6379), database `BENCH_REDIS_DB` (default 12),
flushed first and after.

Measured 2026-11-28 (bench/README.md, issue 31's round 7; 300 streams at 50 ms, quiet
machine): pub/sub and minimal work 21.9-22.1 us a chunk (worker 12.7-12.9, web 6.3-6.5,
Redis 2.7-2.9), 4.4 ms per 200-chunk response; by XREAD 26.8-27.3.
"""
import argparse
import asyncio
import multiprocessing
import os
import resource
import socket
import time

import hiredis
import orjson

from bench.paced_web import _drain  # the client sockets' reader
from responses_app.bus.redis_xread import bulk

WARMUP_SECONDS = 2.0
CHUNK = (b'{"id":"chatcmpl-0123456789abcdef","object":"chat.completion.chunk",'
         b'"created":1764300000,"model":"bench","choices":[{"index":0,"delta":'
         b'{"content":" w%d"},"logprobs":null,"finish_reason":null}]}')
HEAD = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
        b"transfer-encoding: chunked\r\n\r\n")


def _upstream(server: socket.socket, streams: int, pacing: float, start_at: float,
              seconds: float) -> None:
    """Child: accept `streams` connections, then a chunk on each every `pacing` s."""
    connections = []
    for _ in range(streams):
        connection, _ = server.accept()
        connection.recv(65536)  # the request
        connection.sendall(HEAD)
        connections.append(connection)
    due = [start_at + pacing * n / streams for n in range(streams)]
    numbers = [0] * streams
    while time.time() < start_at + seconds:
        now = time.time()
        for n, connection in enumerate(connections):
            if due[n] <= now:
                body = b"data: " + CHUNK % numbers[n] + b"\n\n"
                connection.send(b"%x\r\n%s\r\n" % (len(body), body))
                numbers[n] += 1
                due[n] += pacing
        time.sleep(max(0.0, min(due) - time.time()))


class RedisLink(asyncio.Protocol):
    """A raw Redis connection: commands written as they are packed, replies (and pushes)
    parsed by hiredis and handed to `on_reply`."""

    def __init__(self, on_reply):
        self.reader, self.on_reply, self.transport = hiredis.Reader(), on_reply, None

    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data):
        self.reader.feed(data)
        while (reply := self.reader.gets()) is not False:
            self.on_reply(reply)


async def _redis(loop, url: str, on_reply) -> RedisLink:
    host, port, db = _address(url)
    _, link = await loop.create_connection(lambda: RedisLink(on_reply), host, port)
    link.transport.write(b"*2\r\n$6\r\nSELECT\r\n" + bulk(str(db).encode()))
    return link


def _address(url: str) -> tuple[str, int, int]:
    rest = url.split("://", 1)[1]
    hostport, _, db = rest.partition("/")
    host, _, port = hostport.rpartition(":")
    return host, int(port), int(db or 0)


def _delta(chunk: bytes) -> bytes:
    """The least translation: a chunked-and-SSE-framed chunk to one delta event's JSON."""
    start = chunk.index(b"data: ") + 6
    payload = orjson.loads(chunk[start:chunk.index(b"\n\n", start)])
    return orjson.dumps({"type": "response.output_text.delta", "item_id": "msg_0",
                         "output_index": 0, "content_index": 0,
                         "delta": payload["choices"][0]["delta"]["content"],
                         "logprobs": []})


def _worker(url: str, address, streams: int, relay: str, work: str, window, out) -> None:
    import uvloop

    async def run():
        loop = asyncio.get_running_loop()
        pending: list[tuple[bytes, bytes]] = []
        counted = [0]
        link = await _redis(loop, url, lambda reply: None)

        class Upstream(asyncio.Protocol):
            def __init__(self, key: bytes):
                self.key = key

            def connection_made(self, transport):
                transport.write(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n\r\n")

            def data_received(self, data):
                if data.startswith(b"HTTP/"):
                    return
                pending.append((self.key, _delta(data) if work == "minimal" else data))
                counted[0] += 1

        for n in range(streams):
            await loop.create_connection(lambda n=n: Upstream(b"gw:floor:%d" % n), *address)

        def flush():
            if pending:
                parts = []
                for key, data in pending:
                    parts.append(b"*5\r\n$4\r\nXADD\r\n" + bulk(key) + b"$1\r\n*\r\n$1\r\nd\r\n"
                                 + bulk(data))
                    if relay == "pubsub":
                        parts.append(b"*3\r\n$7\r\nPUBLISH\r\n" + bulk(key) + bulk(data))
                link.transport.write(b"".join(parts))
                pending.clear()
            loop.call_later(0.01, flush)

        flush()
        await _measured(window, counted, out)

    uvloop.run(run())


def _web(url: str, address, streams: int, relay: str, work: str, window, out) -> None:
    import uvloop

    async def run():
        loop = asyncio.get_running_loop()
        counted = [0]
        keys = [b"gw:floor:%d" % n for n in range(streams)]
        clients = {}
        for key in keys:
            transport, _ = await loop.create_connection(asyncio.Protocol, *address)
            clients[key] = transport

        def send(key: bytes, data: bytes) -> None:
            body = b"data: " + data + b"\n\n" if work == "minimal" else data
            clients[key].write(b"%x\r\n%s\r\n" % (len(body), body))
            counted[0] += 1

        if relay == "pubsub":
            def on_push(push):
                if push[0] == b"message":
                    send(push[1], push[2])
            link = await _redis(loop, url, on_push)
            link.transport.write(b"".join(b"*2\r\n$9\r\nSUBSCRIBE\r\n" + bulk(k) for k in keys))
        else:
            cursors = dict.fromkeys(keys, b"0-0")
            replies: asyncio.Queue = asyncio.Queue()
            link = await _redis(loop, url, replies.put_nowait)
            await replies.get()  # SELECT's

            async def read():
                while True:
                    link.transport.write(
                        b"*%d\r\n$5\r\nXREAD\r\n$5\r\nCOUNT\r\n$3\r\n100\r\n$7\r\nSTREAMS\r\n"
                        % (4 + 2 * streams) + b"".join(map(bulk, keys))
                        + b"".join(map(bulk, cursors.values())))
                    reply = await replies.get()
                    for key, entries in reply or ():
                        for entry_id, fields in entries:
                            send(key, fields[1])
                        cursors[key] = entry_id
                    await asyncio.sleep(0.02)
            loop.create_task(read())
        await _measured(window, counted, out)

    uvloop.run(run())


async def _measured(window: tuple[float, float], counted: list, out) -> None:
    """Sleep to the window's start, then report CPU and chunks over it."""
    began_at, ended_at = window
    await asyncio.sleep(began_at - time.time())
    before, start = resource.getrusage(resource.RUSAGE_SELF), counted[0]
    await asyncio.sleep(ended_at - time.time())
    after = resource.getrusage(resource.RUSAGE_SELF)
    out.send(((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
              counted[0] - start))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--streams", type=int, default=300)
    parser.add_argument("--pacing", type=int, default=50, help="ms between a stream's chunks")
    parser.add_argument("--seconds", type=float, default=12.0)
    parser.add_argument("--relay", choices=("xread", "pubsub"), default="xread")
    parser.add_argument("--work", choices=("none", "minimal"), default="none")
    args = parser.parse_args()
    import redis

    base = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379").rstrip("/")
    url = f"{base}/{int(os.environ.get('BENCH_REDIS_DB', '12'))}"
    client = redis.Redis.from_url(url)
    client.flushdb()
    pacing, streams = args.pacing / 1000, args.streams
    start_at = time.time() + 3.0
    window = (start_at + WARMUP_SECONDS, start_at + args.seconds - 1.0)
    upstream = socket.create_server(("127.0.0.1", 0), backlog=streams + 16)
    sink = socket.create_server(("127.0.0.1", 0), backlog=streams + 16)
    children = [
        multiprocessing.Process(target=_upstream, daemon=True, args=(
            upstream, streams, pacing, start_at, args.seconds)),
        multiprocessing.Process(target=_drain, daemon=True, args=(sink, streams))]
    pipes = {}
    for name, target, address in (("worker", _worker, upstream.getsockname()),
                                  ("web", _web, sink.getsockname())):
        receive, send = multiprocessing.Pipe(duplex=False)
        pipes[name] = receive
        children.append(multiprocessing.Process(target=target, daemon=True, args=(
            url, address, streams, args.relay, args.work, window, send)))
    for child in children:
        child.start()
    time.sleep(window[0] - time.time())
    redis_before = _redis_cpu(client)
    time.sleep(window[1] - time.time())
    redis_cpu = _redis_cpu(client) - redis_before
    results = {name: pipe.recv() for name, pipe in pipes.items()}
    for child in children:
        child.kill()
    client.flushdb()
    chunks = results["worker"][1]
    per_chunk = {name: 1e6 * cpu / max(count, 1) for name, (cpu, count) in results.items()}
    per_chunk["redis"] = 1e6 * redis_cpu / max(chunks, 1)
    total = sum(per_chunk.values())
    print(f"{streams} streams at {args.pacing} ms, relay {args.relay}, work {args.work}: "
          f"{chunks} chunks read, {results['web'][1]} relayed; us per chunk: worker "
          f"{per_chunk['worker']:.1f}, web {per_chunk['web']:.1f}, Redis "
          f"{per_chunk['redis']:.1f}, all {total:.1f} ({200 * total / 1000:.2f} ms per "
          f"200-chunk response); load {os.getloadavg()[0]:.2f}")


def _redis_cpu(client) -> float:
    info = client.info("cpu")
    return info["used_cpu_user"] + info["used_cpu_sys"]


if __name__ == "__main__":
    main()
