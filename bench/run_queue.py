"""The run queue's cost per run, at-most-once against at-least-once, and against Celery,
on a Redis server of its own: `python -m bench.run_queue [--runs N] [--batch 100]`.

`pop`: LPUSH by the web, BRPOP by the worker (the queue before processing lists);
`move`: LPUSH, BLMOVE onto the worker's processing list, then LREM once the claim is
settled (delivery/run_queue.py). Reports client CPU (both sides, one process) and the Redis server's
CPU per run, in microseconds, and each variant's round trips per run.
`celery`: what the run queue stands in for, at the same guarantee: a task per run with
`acks_late` (bench/celery_runs.py), published from this process (`apply_async`), run by a
`celery worker --pool threads` process; client CPU is the publisher's plus the worker
process's, from the first publish until the queue and the unacked hash are empty.
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


def process_cpu(pid: int) -> float:
    """Seconds of CPU a process has used (user + system)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure_celery(url: str, runs: int, concurrency: int) -> tuple[float, float]:
    """(client µs, server µs) per run for a Celery task per run (acks_late)."""
    import subprocess
    import sys

    os.environ["BENCH_CELERY_BROKER"] = url
    from bench import celery_runs

    sync = redis.Redis.from_url(url)
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "bench.celery_runs", "worker", "--pool",
         "threads", "--concurrency", str(concurrency), "--without-heartbeat",
         "--without-gossip", "--without-mingle", "-l", "warning"],
        env={**{k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"},
             "BENCH_CELERY_BROKER": url})  # Celery alone: no Django fixup, no gateway
    try:
        def drained() -> None:
            deadline = time.monotonic() + 600
            while sync.llen("bench_runs") or sync.hlen("unacked"):
                if time.monotonic() > deadline:
                    raise TimeoutError("the Celery worker did not drain the queue")
                time.sleep(0.05)

        for _ in range(200):  # warm-up: the worker is up and consuming
            celery_runs.run.apply_async((MESSAGE.decode(),))
        drained()
        time.sleep(1)
        started = time.process_time(), process_cpu(worker.pid), server_cpu(sync)
        for _ in range(runs):
            celery_runs.run.apply_async((MESSAGE.decode(),))
        drained()
        publisher = time.process_time() - started[0]
        consumer = process_cpu(worker.pid) - started[1]
        server = server_cpu(sync) - started[2]
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=60)
    return (publisher + consumer) / runs * 1e6, server / runs * 1e6


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
    parser.add_argument("--celery-runs", type=int, default=5_000,
                        help="runs of the Celery variant per round (0 skips it)")
    parser.add_argument("--celery-concurrency", type=int, default=50)
    args = parser.parse_args()
    from tests.throwaway_services import start_redis

    workdir = Path(tempfile.mkdtemp(prefix="bench-run-queue-"))
    process, url = start_redis(workdir)
    try:
        print("variant  round trips/run  client µs/run  redis µs/run")
        for round_number in range(args.rounds):
            for name, variant, trips in VARIANTS:
                client_us, server_us = measure(url + "/0", variant, args.runs, args.batch)
                print(f"{name:7}  {trips:15}  {client_us:13.1f}  {server_us:12.1f}", flush=True)
            if args.celery_runs:
                client_us, server_us = measure_celery(url + "/1", args.celery_runs,
                                                      args.celery_concurrency)
                print(f"{'celery':7}  {'-':15}  {client_us:13.1f}  {server_us:12.1f}", flush=True)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway.settings")
    main()
