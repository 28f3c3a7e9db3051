"""What a `file_search` turn adds over the same turn's model time, all-in, at c=1 (issue 28:
≤ 30 ms); figures in bench/README.md.

    .venv/bin/python -m bench.file_search                  # 6 rounds of 20 turns per mode
    .venv/bin/python -m bench.file_search --rounds 4 --turns 10

Starts its own throwaway PostgreSQL (the `pgserver` wheel's, with pgvector) and Redis
(tests/throwaway_services.py), the fake upstream (tests/fake_upstream.py, deterministic
embeddings) and a deployment (Daphne + a Celery worker, tests/servers.py), all on loopback,
and stops them all at the end. A store gets two small files (ingested by the worker), then
each round runs, one turn after another (c=1), in alternating order between rounds:

* ``model``       -- the turn's model time: the two streamed Chat Completions calls the
  gateway makes for it (the call of `file_search`, then the answer given the results), sent
  by the client straight to the fake upstream with the same bodies;
* ``file_search`` -- the turn through the gateway: a streamed `POST /v1/responses` with the
  `file_search` tool (`fake-citing-caller`), to `response.completed`: the two model calls,
  the query's embedding, the hybrid search in Postgres, the events, the stored response;
* ``plain_model`` / ``plain`` -- for scale, a turn without a tool: one streamed call of the
  same model (its answer "No tools.") straight to the upstream / through the gateway
  (`POST /v1/responses`, streamed, stored): what any response adds, tool or not.

Added time: per round, `file_search` p50 / p90 minus `model` p50 / p90 (and `plain` minus
`plain_model`); CPU: the web, worker,
Postgres and Redis processes' CPU per turn (all-in, the gateway's side; the fake upstream and
this client are not counted). Bounded: at most `--rounds` × `--turns` × 2 turns, each with a
30 s timeout, and the whole run stops after `--max-seconds`.
"""
import argparse
import io
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
import orjson
import psycopg

from bench.run import _all_stats, machine_jiffies, tree_cpu
from bench.vector_stores import start_fake_upstream
from tests.servers import Deployment, terminate
from tests.throwaway_services import start_postgres, start_redis

HANDBOOK = "Deploys happen on Tuesdays after the standup. Rollbacks need two approvals."
FAQ = "Lunch is served at noon in the kitchen on the second floor."
QUERY = "when do deploys happen"
CALL_LINE = f'call file_search {{"queries": ["{QUERY}"]}}'
MODEL = "fake-citing-caller"
ANSWER = "Found it [1], and more [2]."


def start(workdir: Path):
    """Postgres, Redis, the fake upstream and a deployment; (processes, deployment, api key)."""
    (workdir / "pg").mkdir()
    postgres, postgres_url = start_postgres(workdir / "pg")
    redis_process, redis_url = start_redis(workdir)
    upstream, upstream_url = start_fake_upstream(workdir / "upstream.log")
    processes = {"postgres": postgres, "redis": redis_process, "upstream": upstream}
    with psycopg.connect(f"{postgres_url}/postgres", autocommit=True) as conn:
        conn.execute("CREATE DATABASE gateway_file_search")
    deployment = Deployment(workdir, {
        "DATABASE_URL": f"{postgres_url}/gateway_file_search", "REDIS_URL": f"{redis_url}/0",
        "UPSTREAM_BASE_URL": upstream_url, "FILES_DIR": str(workdir / "files"),
        "LOG_LEVEL": "WARNING"})
    deployment.manage("migrate", "-v0")
    api_key = deployment.new_api_key("bench-file-search")
    deployment.start()
    return processes, deployment, api_key, upstream_url


def make_store(deployment: Deployment, api_key: str) -> str:
    from openai import OpenAI

    client = OpenAI(base_url=deployment.base_url, api_key=api_key, max_retries=0, timeout=30)
    for _ in range(100):  # bounded: the web may still be starting its worker connection
        try:
            store = client.vector_stores.create(name="bench")
            break
        except Exception:
            time.sleep(0.1)
    for name, text in (("handbook.md", HANDBOOK), ("faq.txt", FAQ)):
        done = client.vector_stores.files.upload_and_poll(
            vector_store_id=store.id, file=(name, io.BytesIO(text.encode())))
        if done.status != "completed":
            raise RuntimeError(f"{name} was not ingested: {done.last_error}")
    return store.id


def model_bodies() -> tuple[dict, dict]:
    """The two Chat Completions bodies of the turn (as the gateway sends them)."""
    from responses_app.translation.hosted_items import CITE_HINT, FUNCTIONS

    spec = FUNCTIONS["file_search"]
    tools = [{"type": "function", "function": {
        "name": "file_search", "description": spec["description"],
        "parameters": spec["parameters"]}}]
    first = {"model": MODEL, "stream": True, "tools": tools,
             "messages": [{"role": "user", "content": CALL_LINE}]}
    result = f'Results for "{QUERY}":\n\n[1] handbook.md\n{HANDBOOK}\n\n{CITE_HINT}'
    second = {**first, "messages": [*first["messages"], {
        "role": "assistant", "content": None, "tool_calls": [{
            "id": "call_0", "type": "function",
            "function": {"name": "file_search", "arguments": f'{{"queries": ["{QUERY}"]}}'}}]},
        {"role": "tool", "tool_call_id": "call_0", "content": result}]}
    return first, second


def model_turn(upstream: httpx.Client, bodies) -> float:
    started = time.perf_counter()
    for body in bodies:
        with upstream.stream("POST", "/chat/completions", json=body) as reply:
            reply.raise_for_status()
            for _ in reply.iter_lines():
                pass
    return time.perf_counter() - started


def gateway_turn(gateway: httpx.Client, body: dict, output: list[str], text: str) -> float:
    started = time.perf_counter()
    last = None
    with gateway.stream("POST", "/responses", json=body) as reply:
        reply.raise_for_status()
        for line in reply.iter_lines():
            if line.startswith("data: {"):
                last = orjson.loads(line[6:])
    elapsed = time.perf_counter() - started
    if last["type"] != "response.completed" or [
            item["type"] for item in last["response"]["output"]] != output or last[
            "response"]["output"][-1]["content"][0]["text"] != text:
        raise RuntimeError(f"unexpected end of a turn: {last}")
    return elapsed


def cpu(pids: list[int]) -> float:
    stats = _all_stats()
    return sum(tree_cpu(stats, pid) or 0.0 for pid in pids)


def quantile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(
        values) > 1 else values[0]


def run(args) -> list[dict]:
    workdir = Path(tempfile.mkdtemp(prefix="bench-file-search-"))
    processes, deployment = {}, None
    rounds = []
    deadline = time.monotonic() + args.max_seconds
    try:
        processes, deployment, api_key, upstream_url = start(workdir)
        store_id = make_store(deployment, api_key)
        gateway_pids = [deployment.web.pid, deployment.worker.pid, processes["postgres"].pid,
                        processes["redis"].pid]
        bodies = model_bodies()
        with httpx.Client(base_url=upstream_url, timeout=30) as upstream, httpx.Client(
                base_url=deployment.base_url, timeout=30,
                headers={"Authorization": f"Bearer {api_key}"}) as gateway:
            searching = {"model": MODEL, "input": CALL_LINE, "stream": True,
                         "tools": [{"type": "file_search", "vector_store_ids": [store_id],
                                    "max_num_results": 1}]}
            plain = {"model": MODEL, "input": "hello", "stream": True}
            plain_body = {"model": MODEL, "stream": True,
                          "messages": [{"role": "user", "content": "hello"}]}
            turns = {
                "model": lambda: model_turn(upstream, bodies),
                "file_search": lambda: gateway_turn(gateway, searching,
                                                    ["file_search_call", "message"], ANSWER),
                "plain_model": lambda: model_turn(upstream, [plain_body]),
                "plain": lambda: gateway_turn(gateway, plain, ["message"], "No tools.")}
            for name in turns:  # warm-up, not counted
                for _ in range(3):
                    turns[name]()
            for number in range(args.rounds):
                if time.monotonic() > deadline:
                    break
                order = list(turns) if number % 2 == 0 else list(reversed(turns))
                figures = {"order": "/".join(order), "load": os.getloadavg()[0]}
                for name in order:
                    cpu_before, machine_before = cpu(gateway_pids), machine_jiffies()
                    times = [turns[name]() for _ in range(args.turns)]
                    busy = [a - b for a, b in zip(machine_jiffies(), machine_before)]
                    figures[name] = {
                        "p50": 1000 * statistics.median(times), "p90": 1000 * quantile(times, 90),
                        "cpu_ms": 1000 * (cpu(gateway_pids) - cpu_before) / args.turns,
                        "busy_pct": 100 * busy[0] / busy[1] if busy[1] else None}
                figures["added_p50"] = figures["file_search"]["p50"] - figures["model"]["p50"]
                figures["added_p90"] = figures["file_search"]["p90"] - figures["model"]["p90"]
                figures["plain_added_p50"] = figures["plain"]["p50"] - figures["plain_model"]["p50"]
                print(render_round(number, figures), flush=True)
                rounds.append(figures)
    finally:
        if deployment is not None:
            deployment.stop()
        for process in processes.values():
            terminate(process)
        shutil.rmtree(workdir, ignore_errors=True)
    return rounds


def render_round(number: int, r: dict) -> str:
    return (f"round {number + 1} ({r['order']}, load {r['load']:.1f}): "
            f"model p50/p90 {r['model']['p50']:.1f}/{r['model']['p90']:.1f} ms, "
            f"file_search p50/p90 {r['file_search']['p50']:.1f}/{r['file_search']['p90']:.1f} "
            f"ms, added p50/p90 {r['added_p50']:.1f}/{r['added_p90']:.1f} ms; gateway CPU "
            f"per turn {r['file_search']['cpu_ms']:.1f} ms (model-only rounds "
            f"{r['model']['cpu_ms']:.1f}); without a tool: added p50 "
            f"{r['plain_added_p50']:.1f} ms, CPU {r['plain']['cpu_ms']:.1f} ms; "
            f"machine busy {r['file_search']['busy_pct']:.0f}%")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--turns", type=int, default=20, help="turns per mode per round")
    parser.add_argument("--max-seconds", type=float, default=300.0)
    args = parser.parse_args(argv)
    rounds = run(args)
    if not rounds:
        return 1
    added50 = sorted(r["added_p50"] for r in rounds)
    added90 = sorted(r["added_p90"] for r in rounds)
    cpu_ms = sorted(r["file_search"]["cpu_ms"] for r in rounds)
    print(f"{len(rounds)} rounds: added p50 {added50[0]:.1f}-{added50[-1]:.1f} ms (median "
          f"{statistics.median(added50):.1f}), added p90 {added90[0]:.1f}-{added90[-1]:.1f} ms "
          f"(median {statistics.median(added90):.1f}); gateway CPU per file_search turn "
          f"{cpu_ms[0]:.1f}-{cpu_ms[-1]:.1f} ms; without a tool: added p50 "
          f"{statistics.median(r['plain_added_p50'] for r in rounds):.1f} ms, CPU "
          f"{statistics.median(r['plain']['cpu_ms'] for r in rounds):.1f} ms (medians)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
