"""The run queue's cost per run, at-most-once against at-least-once, on a Redis server of
its own: `python -m bench.run_queue [--runs N] [--batch 100]`.

`pop`: LPUSH by the web, BRPOP by the worker (the queue before processing lists);
`move`: LPUSH, BLMOVE onto the worker's processing list, then LREM once the claim is
settled (delivery/run_queue.py). Reports client CPU (both sides, one process) and the Redis server's
CPU per run, in microseconds, and each variant's round trips per run.
"""
import argparse
import asyncio
import os
import shutil
import signal
import tempfile
import time
from pathlib import Path

import redis
import redis.asyncio as aioredis

MESSAGE = b'{"id": "resp_x", "job": {"model": "m", "input_items": ' + b'"x" ' * 300 + b"}}"


def server_cpu(client: redis.Redis) -> float:
    info = client.info("cpu")
    return info["used_cpu_sys"] + info["used_cpu_user"]


async def pop(client, runs: int, batch: int) -> None:
    for _ in range(runs // batch):
        await client.lpush("gw:runs", *[MESSAGE] * batch)
        for _ in range(batch):
            await client.brpop(["gw:runs"], timeout=1)


async def move(client, runs: int, batch: int) -> None:
    for _ in range(runs // batch):
        await client.lpush("gw:runs", *[MESSAGE] * batch)
        for _ in range(batch):
            message = await client.blmove("gw:runs", "gw:processing:w", 1, "RIGHT", "LEFT")
            await client.lrem("gw:processing:w", 1, message)


VARIANTS = (("pop", pop, "1 + 1/batch"), ("move", move, "2 + 1/batch"))


def measure(url: str, variant, runs: int, batch: int) -> tuple[float, float]:
    """(client µs, server µs) per run."""
    sync = redis.Redis.from_url(url)

    async def go():
        client = aioredis.Redis.from_url(url)
        await variant(client, batch, batch)  # warm-up
        started_cpu, started_server = time.process_time(), server_cpu(sync)
        await variant(client, runs, batch)
        spent = time.process_time() - started_cpu, server_cpu(sync) - started_server
        await client.aclose()
        return spent

    client_s, server_s = asyncio.run(go())
    return client_s / runs * 1e6, server_s / runs * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from tests.throwaway_services import start_redis

    workdir = Path(tempfile.mkdtemp(prefix="bench-run-queue-"))
    process, url = start_redis(workdir)
    try:
        print("variant  round trips/run  client µs/run  redis µs/run")
        for round_number in range(args.rounds):
            for name, variant, trips in VARIANTS:
                client_us, server_us = measure(url + "/0", variant, args.runs, args.batch)
                print(f"{name:7}  {trips:15}  {client_us:13.1f}  {server_us:12.1f}")
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway.settings")
    main()
