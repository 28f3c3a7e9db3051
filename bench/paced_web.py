"""The web's relay alone, in process: CPU per 50 ms-paced bus entry (issue 31).

    .venv/bin/python -m bench.paced_web [--streams 300] [--pacing 50] [--seconds 10]

Runs what the web process does per streamed chunk, and nothing of a response's start or
end (no request, no database, no first read's wait): `--streams` subscriptions of the
Redis bus's shared read (bus/redis_reader.py, as the web holds them), each written through
(relay.write_through) as an HTTP chunk to a TCP loopback socket of its own, and a relay
task per stream waiting in `batches` as a real stream's does. A child process writes one
entry per stream every `--pacing` ms in the workers' layout (`1-<n>`: `f`, `d` one
response.output_text.delta event's JSON, `t`), every 10 ms the entries due, starts spread
over one interval; another drains the sockets. Prints this process's CPU (user + system)
per entry and per second over the middle of the run (the first two seconds and the last
one left out), the writes (an entry that waited past its stream's next one goes in the
same write), the Redis server's XREAD calls and their CPU, the flush script's CPU and
the server's whole CPU (INFO cpu: on a server of the bench's own, the reads' and the
writes' cost in Redis, the I/O included), and each write's lag behind its last event's
due time (p50, p99: the writer's 10 ms tick, Redis and the relay's wait).

Redis: `TEST_REDIS_URL` (default 127.0.0.1:6379), database `BENCH_REDIS_DB` (default 12),
flushed first; its commandstats are reset. The writer child sends the workers' flush
script (bus/redis_append.py) of the code it runs with. `STREAM_FLUSH_INTERVAL_MS` was the
shared read's wait between reads (before the reads by pub/sub), as in the web.
"""
import argparse
import asyncio
import multiprocessing
import os
import resource
import selectors
import socket
import time

from bench.paced_worker import setup

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway.settings")

EVENT = (b'{"type":"response.output_text.delta","sequence_number":%d,'
         b'"item_id":"msg_0123456789abcdef0123456789abcdef","output_index":0,'
         b'"content_index":0,"delta":"w%d ","logprobs":[]}')
WARMUP_SECONDS = 2.0


def _write(url: str, keys: list[str], pacing: float, start_at: float, seconds: float) -> None:
    """Child process: an entry per stream every `pacing` seconds, the due ones every 10 ms
    in one call of the workers' flush script (bus/redis_append.py), as a worker loop's
    flush at a 10 ms tick sends them."""
    import redis

    from responses_app.bus.entries import Entry
    from responses_app.bus.redis_append import APPEND_SCRIPT, packed_flush

    client = redis.Redis.from_url(url)
    client.script_load(APPEND_SCRIPT)
    connection = client.connection_pool.get_connection()
    while time.time() < start_at:
        time.sleep(0.001)
    numbers = dict.fromkeys(keys, 0)
    due = {key: start_at + pacing * n / len(keys) for n, key in enumerate(keys)}
    while time.time() < start_at + seconds:
        now = time.time()
        batch = {}
        for key in keys:
            if due[key] <= now:
                number = numbers[key]
                numbers[key] = number + 1
                due[key] += pacing
                batch[key] = Entry(number, number, [EVENT % (number, number)])
        if batch:
            connection.send_packed_command([packed_flush(batch, 60_000, 600_000)])
            connection.read_response()
        time.sleep(0.01)


def _drain(server: socket.socket, count: int) -> None:
    """Child process: accept `count` connections and read whatever comes."""
    selector = selectors.DefaultSelector()
    for _ in range(count):
        connection, _ = server.accept()
        connection.setblocking(False)
        selector.register(connection, selectors.EVENT_READ)
    while True:
        for key, _ in selector.select(1):
            if not key.fileobj.recv(65536):
                selector.unregister(key.fileobj)


async def _relay(url: str, streams: int, pacing: float, seconds: float) -> dict:
    import redis

    from responses_app.api.relay import Reply, batches, write_through
    from responses_app.api.relay_span import RESPONSE, RelaySpan
    from responses_app.bus import event_bus
    from responses_app.ids import new_id

    server = socket.create_server(("127.0.0.1", 0), backlog=streams + 16)
    drainer = multiprocessing.Process(target=_drain, args=(server, streams), daemon=True)
    drainer.start()
    response_ids = [new_id("resp") for _ in range(streams)]
    writes = [0]
    lags: list[float] = []  # seconds from an entry's due time to its write, last event's
    start_at = time.time() + 1.0

    def writer(connection: socket.socket, index: int):
        offset = start_at + pacing * index / streams

        def write(body: bytes) -> None:  # the chunk as Daphne's write sends it
            writes[0] += 1
            connection.send(b"%x\r\n%s\r\n" % (len(body), body))
            at = body.rindex(b'"sequence_number":') + 18
            number = int(body[at:body.index(b",", at)])
            lags.append(time.time() - offset - pacing * number)
        return write

    tasks = []
    for response_id in response_ids:
        connection = socket.create_connection(server.getsockname())
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        subscription = await event_bus().subscribe(response_id, -1)
        write_through(Reply(200, subscription=subscription,
                            span=RelaySpan(RESPONSE, response_id, "sse")),
                      writer(connection, len(tasks)))
        tasks.append(asyncio.ensure_future(_follow(batches(subscription))))
    keys = [f"gw:events:{response_id}" for response_id in response_ids]
    child = multiprocessing.Process(target=_write, args=(url, keys, pacing, start_at, seconds),
                                    daemon=True)
    child.start()
    client = redis.Redis.from_url(url)
    await asyncio.sleep(start_at - time.time() + WARMUP_SECONDS)
    client.config_resetstat()
    redis_before = _redis_cpu(client)
    before, written, began = resource.getrusage(resource.RUSAGE_SELF), writes[0], time.time()
    lags.clear()
    await asyncio.sleep(seconds - WARMUP_SECONDS - 1.0)
    after, done, ended = resource.getrusage(resource.RUSAGE_SELF), writes[0], time.time()
    measured = sorted(lags)
    redis_cpu = _redis_cpu(client) - redis_before
    stats = client.info("commandstats")
    xread = stats.get("cmdstat_xread", {"calls": 0, "usec": 0})
    evalsha = stats.get("cmdstat_evalsha", {"calls": 0, "usec": 0})
    for task in tasks:
        task.cancel()
    child.kill()
    drainer.kill()
    elapsed = ended - began
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    entries = streams * elapsed / pacing
    return {"elapsed": elapsed, "entries": entries, "writes": done - written, "cpu": cpu,
            "system": after.ru_stime - before.ru_stime, "xreads": xread["calls"],
            "xread_usec": xread["usec"], "flush_usec": evalsha["usec"], "redis_cpu": redis_cpu,
            "lag_p50": measured[len(measured) // 2], "lag_p99": measured[len(measured) * 99 // 100]}


def _redis_cpu(client) -> float:
    """The Redis server's CPU seconds so far (its main thread and the rest)."""
    info = client.info("cpu")
    return info["used_cpu_user"] + info["used_cpu_sys"]


async def _follow(relayed) -> None:
    async for _ in relayed:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--streams", type=int, default=300)
    parser.add_argument("--pacing", type=int, default=50, help="ms between a stream's entries")
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    url = setup()
    import redis

    redis.Redis.from_url(url).flushdb()
    try:
        import uvloop  # the web's loop (gateway/serve.py)
        uvloop.install()
    except ImportError:
        pass
    result = asyncio.run(_relay(url, args.streams, args.pacing / 1000, args.seconds))
    redis.Redis.from_url(url).flushdb()
    entries = result["entries"]
    print(f"{args.streams} streams at {args.pacing} ms, {result['elapsed']:.1f} s: "
          f"~{entries:.0f} entries in {result['writes']} writes; web CPU "
          f"{1e6 * result['cpu'] / entries:.1f} us per entry (system "
          f"{1e6 * result['system'] / entries:.1f}), {1e3 * result['cpu'] / result['elapsed']:.0f} "
          f"ms per second; Redis XREAD {result['xreads']} calls, "
          f"{result['xread_usec'] / max(result['xreads'], 1):.0f} us each, "
          f"{result['xread_usec'] / entries:.2f} us per entry; flush script "
          f"{result['flush_usec'] / entries:.2f} us per entry; Redis CPU "
          f"{1e6 * result['redis_cpu'] / entries:.1f} us per entry (the whole server); "
          f"delivery lag p50 {1e3 * result['lag_p50']:.1f} ms, "
          f"p99 {1e3 * result['lag_p99']:.1f} ms; "
          f"load {os.getloadavg()[0]:.2f}")
    os._exit(0)  # the children are killed; skip waiting on their pipes


if __name__ == "__main__":
    main()
