"""Long-session costs, in process on a real Postgres (`make bench` runs it after the matrix):

- continuing a chain: what a run does before its first upstream call (responses_app.worker
  .run_job.prepared: the chain read and the chat request built) for a 1-turn chain, a
  1,000-turn chain, and a 1,000-turn chain compacted at turn 990 (the read stops at the
  compaction); the bar: ≤ 10 ms p50 over the 1-turn chain;
- `POST /v1/responses/input_tokens` on a 100 KB input (context.services.response_input_tokens,
  its validation, build and count) with a local tokenizer.json (a byte-level BPE trained
  here, 8,000 tokens); the bar: ≤ 20 ms p50.

    .venv/bin/python -m bench.context [--rounds N]

Creates the database `gateway_bench_context` (or `$BENCH_CONTEXT_DB_NAME`), drops it after.
"""
import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from tests.servers import drop_postgres_database, fresh_postgres_database

DB_NAME = os.environ.get("BENCH_CONTEXT_DB_NAME", "gateway_bench_context")
TURNS = 1000
WORDS = ["context", "window", "token", "summary", "tool", "call", "result", "model", "agent",
         "session", "history", "the", "a", "of", "and", "to", "in", "is", "it", "for"]


def _setup_django(database_url: str) -> None:
    os.environ["DATABASE_URL"] = database_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def _chain(tenant, turns: int, compact_at: int | None) -> str:
    """`turns` stored responses, each continuing the one before; the newest one's id."""
    from responses_app.context.compaction_items import compaction_item
    from responses_app.ids import new_id
    from responses_app.models import StoredResponse
    from tests.admin_data import assistant_message, user_message

    rng, rows, previous = random.Random(turns), [], None
    start = datetime.now(timezone.utc) - timedelta(hours=1)
    for turn in range(turns):
        response_id = new_id("resp")
        input_items = [user_message(_text(rng, 30))]
        if turn == compact_at:
            input_items.append(compaction_item(_text(rng, 200)))
        rows.append(StoredResponse(
            id=response_id, tenant=tenant, status="completed", model="bench", store=True,
            previous_response_id=previous, created_at=start + timedelta(seconds=turn),
            request={"instructions": None, "include": [], "params": {"tools": []}},
            input_items=input_items,
            resource={"id": response_id, "object": "response", "status": "completed",
                      "output": [assistant_message(_text(rng, 60))], "usage": None}))
        previous = response_id
    StoredResponse.objects.bulk_create(rows, batch_size=200)
    return previous


def _job(tenant, previous: str):
    from responses_app.delivery.jobs import Job

    return Job(id="resp_bench", tenant_id=tenant.id, model="bench", store=True,
               background=False, previous_response_id=previous,
               request={"instructions": "Be brief.", "include": [], "context": {},
                        "params": {"tools": [], "tool_choice": "auto",
                                   "parallel_tool_calls": True, "text": {}}},
               input_items=[{"id": "msg_new", "type": "message", "role": "user",
                             "content": [{"type": "input_text", "text": "next"}]}],
               resource={})


def _p50_ms(function, rounds: int) -> tuple[float, float]:
    """(wall p50, CPU p50 of this process, all its threads) in ms: on a shared machine the
    CPU time says more than the wall time, which includes waiting for a core."""
    function()  # warm: connections, caches
    walls, cpus = [], []
    for _ in range(rounds):
        started, cpu = time.perf_counter(), time.process_time()
        function()
        walls.append((time.perf_counter() - started) * 1000)
        cpus.append((time.process_time() - cpu) * 1000)
    return statistics.median(walls), statistics.median(cpus)


def _tokenizer_file(directory: Path) -> Path:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    rng = random.Random(7)
    corpus = [_text(rng, 40) + f" {rng.randint(0, 10**6)} x{rng.random():.6f}"
              for _ in range(3000)]
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.train_from_iterator(corpus, trainers.BpeTrainer(
        vocab_size=8000, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    path = directory / "tokenizer.json"
    tokenizer.save(str(path))
    return path


def bench_chains(rounds: int) -> list[tuple[str, float, float]]:
    from responses_app.models import Tenant
    from responses_app.worker.run_job import prepared

    tenant = Tenant.objects.create(name="bench-context")
    chains = [("1-turn chain", _chain(tenant, 1, None)),
              (f"{TURNS}-turn chain", _chain(tenant, TURNS, None)),
              (f"{TURNS}-turn chain, compacted at turn {TURNS - 10}",
               _chain(tenant, TURNS, TURNS - 10))]
    return [(name, *_p50_ms(lambda p=previous: prepared(_job(tenant, p)), rounds))
            for name, previous in chains]


def bench_input_tokens(rounds: int, directory: Path) -> tuple[str, float, float, int]:
    from responses_app.context.services import response_input_tokens
    from responses_app.models import Tenant
    from upstreams.models import UpstreamRoute
    from upstreams.routing import forget_routes

    UpstreamRoute.objects.create(name="bench-tok", model_pattern="bench-tok",
                                 base_url="http://127.0.0.1:9/v1", token_counter="tokenizer",
                                 tokenizer_path=str(_tokenizer_file(directory)))
    forget_routes()
    tenant = Tenant.objects.create(name="bench-tokens")
    text = _text(random.Random(1), 20_000)[:100_000]
    body = {"model": "bench-tok", "instructions": "Be brief.", "input": text}
    tokens = response_input_tokens(tenant, body).tokens
    return ("input_tokens, 100 KB, local tokenizer", *_p50_ms(
        lambda: response_input_tokens(tenant, body), rounds), tokens)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=50)
    args = parser.parse_args(argv)
    _setup_django(fresh_postgres_database(DB_NAME))
    try:
        with tempfile.TemporaryDirectory() as directory:
            chains = bench_chains(args.rounds)
            name, p50, p90, tokens = bench_input_tokens(args.rounds, Path(directory))
    finally:
        from django.db import connections

        connections.close_all()
        drop_postgres_database(DB_NAME)
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores\n")
    print("| long sessions | wall p50 ms | CPU p50 ms |\n|---|---|---|")
    for row_name, row_wall, row_cpu in chains:
        print(f"| continue a {row_name} | {row_wall:.1f} | {row_cpu:.1f} |")
    print(f"| {name} ({tokens} tokens) | {p50:.1f} | {p90:.1f} |")
    base = chains[0][1]
    print(f"\nwall p50 over the 1-turn chain: {chains[1][1] - base:+.1f} ms (no compaction), "
          f"{chains[2][1] - base:+.1f} ms (compacted); bars: ≤ 10 ms, input_tokens ≤ 20 ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
