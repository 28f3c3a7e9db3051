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
same write) and the Redis server's XREAD calls and their CPU.

Redis: `TEST_REDIS_URL` (default 127.0.0.1:6379), database `BENCH_REDIS_DB` (default 12),
flushed first; its commandstats are reset. `STREAM_FLUSH_INTERVAL_MS` is the shared read's
wait between reads, as in the web.
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
    """Child process: an entry per stream every `pacing` seconds, due ones every 10 ms."""
    import redis

    client = redis.Redis.from_url(url)
    while time.time() < start_at:
        time.sleep(0.001)
    numbers = dict.fromkeys(keys, 0)
    due = {key: start_at + pacing * n / len(keys) for n, key in enumerate(keys)}
    while time.time() < start_at + seconds:
        now = time.time()
        pipe = client.pipeline(transaction=False)
        for key in keys:
            if due[key] <= now:
                number = numbers[key]
                numbers[key] = number + 1
                due[key] += pacing
                pipe.xadd(key, {"f": number, "d": EVENT % (number, number),
                                "t": int(now * 1000)}, id=f"1-{number}")
        if pipe.command_stack:
            pipe.execute()
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
    from responses_app.bus import event_bus
    from responses_app.ids import new_id

    server = socket.create_server(("127.0.0.1", 0), backlog=streams + 16)
    drainer = multiprocessing.Process(target=_drain, args=(server, streams), daemon=True)
    drainer.start()
    response_ids = [new_id("resp") for _ in range(streams)]
    writes = [0]

    def writer(connection: socket.socket):
        def write(body: bytes) -> None:  # the chunk as Daphne's write sends it
            writes[0] += 1
            connection.send(b"%x\r\n%s\r\n" % (len(body), body))
        return write

    tasks = []
    for response_id in response_ids:
        connection = socket.create_connection(server.getsockname())
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        subscription = await event_bus().subscribe(response_id, -1)
        write_through(Reply(200, subscription=subscription), writer(connection))
        tasks.append(asyncio.ensure_future(_follow(batches(subscription, counted=False))))
    start_at = time.time() + 1.0
    keys = [f"gw:events:{response_id}" for response_id in response_ids]
    child = multiprocessing.Process(target=_write, args=(url, keys, pacing, start_at, seconds),
                                    daemon=True)
    child.start()
    client = redis.Redis.from_url(url)
    await asyncio.sleep(start_at - time.time() + WARMUP_SECONDS)
    client.config_resetstat()
    before, written, began = resource.getrusage(resource.RUSAGE_SELF), writes[0], time.time()
    await asyncio.sleep(seconds - WARMUP_SECONDS - 1.0)
    after, done, ended = resource.getrusage(resource.RUSAGE_SELF), writes[0], time.time()
    xread = client.info("commandstats").get("cmdstat_xread", {"calls": 0, "usec": 0})
    for task in tasks:
        task.cancel()
    child.kill()
    drainer.kill()
    elapsed = ended - began
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    entries = streams * elapsed / pacing
    return {"elapsed": elapsed, "entries": entries, "writes": done - written, "cpu": cpu,
            "system": after.ru_stime - before.ru_stime, "xreads": xread["calls"],
            "xread_usec": xread["usec"]}


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
          f"{result['xread_usec'] / entries:.2f} us per entry; load {os.getloadavg()[0]:.2f}")
    os._exit(0)  # the children are killed; skip waiting on their pipes


if __name__ == "__main__":
    main()
