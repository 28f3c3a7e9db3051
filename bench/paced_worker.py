"""The worker's streaming loop alone, in process: CPU per 50 ms-paced chunk (issue 31).

    .venv/bin/python -m bench.paced_worker [--streams 150] [--responses 300] [--pacing 50]

Runs what a worker's run loop does per streamed chunk, and nothing of a run's start or end
(no Celery, no claim, no database): `--streams` concurrent responses of the model
`bench-200-<pacing>` from the benchmark's fake upstream (bench/upstream.py, its own
process), each read with the worker's HTTP client (worker/upstream.py's chunk batches),
translated by the run's own `Streaming._translated` (state machine, numbering, first-delta
handling) and written to Redis through the bus writer (flush tick and all), then its
closing events as the end entry. Starts are spread over one response's time, as the
benchmark's clients are. Prints this process's CPU (user + system) per chunk and per
response, over the whole run; the upstream's is not counted.

Redis: `TEST_REDIS_URL` (default 127.0.0.1:6379), database `BENCH_REDIS_DB` (default 12),
flushed first. `--profile FILE` writes a cProfile of the run. Also prints how long after
the upstream sent it a delta's entry was packed for Redis (p50, p99, max): the latency side
of whatever the loop gathers (the flush tick; issue 31's round 3 measured a loop tick).
"""
import argparse
import asyncio
import os
import re
import subprocess
import sys
import time

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway.settings")


def setup() -> str:
    """Django set up on the bench's Redis database (TEST_REDIS_URL, BENCH_REDIS_DB): its URL."""
    redis_url = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379").rstrip("/")
    url = f"{redis_url}/{int(os.environ.get('BENCH_REDIS_DB', '12'))}"
    os.environ["REDIS_URL"] = url
    django.setup()
    return url


async def _one(index: int, upstream: str, pacing: int, delay: float, counts: list) -> None:
    from django.conf import settings

    from responses_app.bus import event_bus
    from responses_app.bus.entries import stamped_entry
    from responses_app.ids import new_id
    from responses_app.translation.compaction_events import CompactingTranslator
    from responses_app.translation.numbering import EventStamper
    from responses_app.translation.state_machine import TranslatorOptions
    from responses_app.worker.run_streaming import Streaming
    from responses_app.worker.chunk_batches import ChunkBatches
    from responses_app.worker.upstream import http_client

    await asyncio.sleep(delay)
    run = Streaming.__new__(Streaming)  # the run's streaming phase without its job and claim
    response_id = new_id("resp")
    run.writer = event_bus().writer(response_id)
    run.translator = CompactingTranslator(
        {"id": response_id, "object": "response", "model": f"bench-200-{pacing}",
         "output": [], "status": "queued"}, TranslatorOptions(ids=new_id))
    run.stamper = EventStamper()
    run.first_delta_at = None
    run.stopped = None
    _SENT_AT[run.writer.key] = time.monotonic()  # the upstream starts its schedule on receipt
    body = (b'{"model":"bench-200-%d","messages":[{"role":"user","content":"hi"}],'
            b'"stream":true,"stream_options":{"include_usage":true}}' % pacing)
    response = await http_client().post(
        f"{upstream}/chat/completions", body,
        {"content-type": "application/json", "accept": "text/event-stream",
         "accept-encoding": "identity"}, connect_timeout=5, idle_timeout=30)
    try:
        await run._translated(ChunkBatches(response, settings.STREAM_BATCH_MS / 1000))
    finally:
        response.release()
    closing = run.translator.finish()
    await run.writer.append(stamped_entry(run.stamper, closing, end=True), urgent=True)
    counts[0] += 1
    counts[1] += run.stamper.next_sequence_number


async def _main(args, upstream: str) -> tuple[float, float, list]:
    from responses_app.bus import event_bus

    span = 200 * args.pacing / 1000
    counts = [0, 0]

    async def stream(i: int) -> None:
        for n in range(args.responses // args.streams):
            await _one(i, upstream, args.pacing, (i / args.streams) * span if n == 0 else 0,
                       counts)

    started, cpu = time.monotonic(), time.process_time()
    await asyncio.wait_for(asyncio.gather(*(stream(i) for i in range(args.streams))),
                           timeout=span * (args.responses // args.streams + 2) + 60)
    cpu, wall = time.process_time() - cpu, time.monotonic() - started
    await event_bus().aclose()
    return cpu, wall, counts


_SENT_AT: dict = {}  # stream key -> when its request was sent
_DELTA = re.compile(rb'"delta":"w(\d+) "')


def _lags(pacing: int) -> list:
    """Each written entry's lag: when its flush to Redis was packed, less when the upstream
    sent the entry's first delta (chunk k, of text `wk `, is due `k * pacing` after the
    request: bench/upstream.py keeps that schedule); the bus's packing is wrapped to see
    it."""
    from responses_app.bus import redis_append

    lags, packed = [], redis_append.packed_flush

    def packed_flush(batch, *args):
        now = time.monotonic()
        for key, entry in batch.items():
            sent_at = _SENT_AT.get(key)
            for event in entry.events if sent_at is not None else ():
                found = _DELTA.search(event)
                if found:
                    lags.append(now - sent_at - int(found.group(1)) * pacing / 1000)
                    break
        return packed(batch, *args)

    redis_append.packed_flush = packed_flush
    return lags


def _quantiles(values: list) -> str:
    values = sorted(values)
    at = lambda share: values[min(len(values) - 1, int(share * len(values)))] * 1000  # noqa: E731
    return f"p50 {at(0.5):.1f}, p99 {at(0.99):.1f}, max {values[-1] * 1000:.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=150)
    parser.add_argument("--responses", type=int, default=300)
    parser.add_argument("--pacing", type=int, default=50)
    parser.add_argument("--profile", default="")
    args = parser.parse_args()
    url = setup()
    import redis

    redis.Redis.from_url(url).flushdb()
    upstream = subprocess.Popen([sys.executable, "-m", "bench.upstream"],
                                stdout=subprocess.PIPE, text=True)
    try:
        port = int(upstream.stdout.readline().split()[1])
        from responses_app.worker.loop import new_event_loop

        loop = new_event_loop()
        lags = _lags(args.pacing)
        profile = None
        if args.profile:
            import cProfile
            profile = cProfile.Profile(time.process_time)  # CPU, not wall time
            profile.enable()
        cpu, wall, (responses, events) = loop.run_until_complete(
            _main(args, f"http://127.0.0.1:{port}/v1"))
        if profile is not None:
            profile.disable()
            profile.dump_stats(args.profile)
    finally:
        upstream.terminate()
        upstream.wait()
    chunks = responses * 200
    print(f"a delta's entry packed for Redis after the upstream sent it: {_quantiles(lags)}")
    print(f"{responses} responses, {events} events, {wall:.1f} s: CPU {cpu * 1000:.0f} ms, "
          f"{cpu / chunks * 1e6:.1f} us per chunk, {cpu / responses * 1000:.2f} ms per "
          f"response; load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
