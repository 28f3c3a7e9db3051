"""Chain affinity on a route of replicas (issue 31), by hand:

    .venv/bin/python -m bench.affinity [--chains 100] [--turns 20] [--replicas 4]
                                       [--concurrency 20] [--token-ms 0.1] [--rounds 2]
                                       [--cache-tokens 0] [--think-ms 50]
                                       [--user-words 100] [--answer-words 200]

A fake replica set on 127.0.0.1 models a prefix (KV) cache: a replica's first token comes
`token-ms` per prompt token it has not seen for that chain (its cache holds, per chain,
the prompt and answer it last processed; a prompt that extends them pays only for the
rest; `--cache-tokens N` bounds it, least recently used chains evicted first). Chains of
`turns` turns (each turn `--user-words` tokens of user input and `--answer-words` of
answer, one token a word; a client pauses before each turn, uniform from 0 to
`--think-ms`, the same pauses in every mode) go through the worker's upstream call
(responses_app.worker.upstream.open_chat_stream) and the deployment's replica pool
(upstreams.pool) on a throwaway Redis, three ways:

- affinity: every turn continues its chain (Placement.for_run with previous_response_id);
- least loaded: the same calls with no chain (least in flight, ties in rotation);
- round robin: each call to the next replica in turn, whatever its chain.

A round runs `chains` chains, `concurrency` at once, in one mode; the rounds go in both
orders (A B C, C B A, ...). Printed per round: turn-`turns` first-token time p50 / p90,
every turn's p50, and the spread of calls (and of chains' first turns) across replicas
as the largest deviation from the mean. Bounded: at most chains x turns calls per round,
and every call times out after 30 s.
"""
import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from collections import OrderedDict
from pathlib import Path

import orjson



class PrefixCacheReplica:
    """One fake model server with a per-chain prefix cache: unbounded, or holding at most
    `cache_tokens` tokens, the chains used least recently evicted first (a real server's
    KV cache is a few GB: it holds some hundred thousand tokens)."""

    def __init__(self, token_ms: float, answer_words: int, cache_tokens: int = 0):
        self.token_ms, self.answer_words, self.cache_tokens = token_ms, answer_words, cache_tokens
        self.seen: OrderedDict[str, int] = OrderedDict()  # chain -> tokens processed
        self.calls = 0
        self.chains_started = 0

    async def start(self) -> str:
        self.server = await asyncio.start_server(self.serve, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/v1"

    async def serve(self, reader, writer):
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                                  if line.lower().startswith(b"content-length")))
                body = orjson.loads(await reader.readexactly(length))
                await self.answer(body, writer)
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass  # the client closed, or the bench is over
        writer.close()

    async def answer(self, body: dict, writer) -> None:
        self.calls += 1
        messages = body["messages"]
        chain = messages[0]["content"]
        prompt = sum(len(m["content"].split()) for m in messages)
        cached = min(self.seen.get(chain, 0), prompt)
        if len(messages) == 2:
            self.chains_started += 1
        await asyncio.sleep((prompt - cached) * self.token_ms / 1000)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                     b"transfer-encoding: chunked\r\n\r\n")
        words = " ".join(["ok"] * self.answer_words)
        for payload in ({"choices": [{"index": 0, "delta": {"content": words}}]},
                        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}):
            frame = b"data: " + orjson.dumps(payload) + b"\n\n"
            writer.write(b"%x\r\n%s\r\n" % (len(frame), frame))
        writer.write(b"e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n")
        await writer.drain()
        self.seen[chain] = prompt + self.answer_words
        self.seen.move_to_end(chain)
        while self.cache_tokens and sum(self.seen.values()) > self.cache_tokens:
            self.seen.popitem(last=False)


MODES = ("affinity", "least loaded", "round robin")


class Targets:
    """Where a mode sends a call: the route of replicas (affinity: with the chain;
    least loaded: without), or round robin: each call to the next replica in turn (a
    route of that one URL), whatever its chain."""

    def __init__(self, route):
        from upstreams.routing import Route

        self.route = route
        self.singles = [Route(name=f"rr-{n}", base_url=url, api_key="", connect_timeout=10,
                              idle_timeout=30) for n, url in enumerate(route.replicas)]
        self.next = 0

    def call(self, mode: str, response_id: str, previous: str | None):
        from upstreams.replicas import Placement

        if mode == "affinity":
            return self.route, Placement.for_run(response_id, previous, None)
        if mode == "least loaded":
            return self.route, Placement()
        self.next += 1
        return self.singles[self.next % len(self.singles)], Placement()


async def one_chain(targets: Targets, number: int, args, mode: str,
                    tag: str) -> list[float]:
    """The chain's first-token time of each turn, in seconds."""
    from responses_app.worker.upstream import open_chat_stream

    messages = [{"role": "system", "content": f"chain {tag}-{number}"}]
    firsts, previous = [], None
    think = random.Random(number)  # the same pauses in every mode
    for turn in range(args.turns):
        # the client thinks (a user reads, an agent runs its tool): chains drift apart, as
        # independent clients do, rather than call in lock-step
        await asyncio.sleep(think.uniform(0, args.think_ms / 1000))
        messages.append({"role": "user",
                         "content": " ".join([f"w{turn}"] * args.user_words)})
        response_id = f"resp_{tag}_{number}_{turn}"
        route, placement = targets.call(mode, response_id, previous)
        started = time.monotonic()
        first = None
        async with asyncio.timeout(30):
            async with open_chat_stream(route, {"model": "m", "stream": True,
                                                "messages": messages}, 0.0,
                                        placement=placement) as batches:
                async for batch in batches:
                    if first is None and batch:
                        first = time.monotonic() - started
                    for chunk in batch:
                        for choice in chunk["choices"]:
                            if choice["delta"].get("content"):
                                messages.append({"role": "assistant",
                                                 "content": choice["delta"]["content"]})
        firsts.append(first)
        previous = response_id
    return firsts


async def one_round(replicas, targets: Targets, args, mode: str, tag: str) -> dict:
    for replica in replicas:
        replica.calls = replica.chains_started = 0
        replica.seen.clear()
    gate = asyncio.Semaphore(args.concurrency)

    async def gated(number):
        async with gate:
            return await one_chain(targets, number, args, mode, tag)

    started = time.monotonic()
    results = await asyncio.gather(*(gated(n) for n in range(args.chains)))
    last = sorted(firsts[-1] for firsts in results)
    calls = [replica.calls for replica in replicas]
    chains = [replica.chains_started for replica in replicas]
    return {"mode": mode,
            "seconds": time.monotonic() - started,
            "last_p50_ms": statistics.median(last) * 1000,
            "last_p90_ms": last[int(len(last) * 0.9) - 1] * 1000,
            "turn_p50_ms": [statistics.median(f[t] for f in results) * 1000
                            for t in range(args.turns)],
            "calls": calls, "calls_spread": _spread(calls),
            "chains": chains, "chains_spread": _spread(chains)}


def _spread(counts: list[int]) -> float:
    """The largest deviation from the mean, as a fraction of the mean."""
    mean = sum(counts) / len(counts)
    return max(abs(c - mean) for c in counts) / mean if mean else 0.0


async def bench(args) -> list[dict]:
    from responses_app.worker.upstream import close_loop_client
    from upstreams.routing import Route

    replicas = [PrefixCacheReplica(args.token_ms, args.answer_words, args.cache_tokens)
                for _ in range(args.replicas)]
    urls = [await replica.start() for replica in replicas]
    route = Route(name="bench-pool", base_url=urls[0], more_urls=tuple(urls[1:]), api_key="",
                  connect_timeout=10, idle_timeout=30)
    targets = Targets(route)
    rounds = []
    try:
        for pair in range(args.rounds):
            order = MODES if pair % 2 == 0 else MODES[::-1]
            for mode in order:
                result = await one_round(replicas, targets, args, mode, f"r{len(rounds)}")
                rounds.append(result)
                print(f"{result['mode']:>12}: turn {args.turns} first token p50 "
                      f"{result['last_p50_ms']:.0f} ms, p90 {result['last_p90_ms']:.0f} ms; "
                      f"calls per replica {result['calls']} (±{result['calls_spread']:.1%}), "
                      f"chains {result['chains']} (±{result['chains_spread']:.1%}); "
                      f"{result['seconds']:.1f} s", flush=True)
    finally:
        await close_loop_client()
        for replica in replicas:
            replica.server.close()
    return rounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chains", type=int, default=100)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--replicas", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--token-ms", type=float, default=0.1,
                        help="first-token delay per prompt token the replica has not seen")
    parser.add_argument("--user-words", type=int, default=100,
                        help="tokens of a turn's user message (one per word)")
    parser.add_argument("--answer-words", type=int, default=200,
                        help="tokens of a turn's answer")
    parser.add_argument("--think-ms", type=float, default=50,
                        help="a client's pause before each turn: uniform from 0 to this")
    parser.add_argument("--cache-tokens", type=int, default=0,
                        help="each replica's prefix cache, in tokens (0: unbounded)")
    parser.add_argument("--rounds", type=int, default=2, help="pairs of rounds (A B, B A, ...)")
    args = parser.parse_args()

    from tests.throwaway_services import start_redis

    with tempfile.TemporaryDirectory(prefix="bench-affinity-") as workdir:
        redis_process, redis_url = start_redis(Path(workdir))
        try:
            os.environ.update({"REDIS_URL": f"{redis_url}/0", "LOG_LEVEL": "WARNING",
                               "DJANGO_SETTINGS_MODULE": "gateway.settings"})
            import django

            django.setup()
            rounds = asyncio.run(bench(args))
        finally:
            redis_process.terminate()
            redis_process.wait(timeout=10)
    by_mode = {mode: [r for r in rounds if r["mode"] == mode] for mode in MODES}
    for other in MODES[1:]:
        for key in ("last_p50_ms", "last_p90_ms"):
            ratios = [a[key] / b[key] for a, b in zip(by_mode["affinity"], by_mode[other])]
            print(f"turn {args.turns} first-token {key[5:8]}, affinity / {other}, per round: "
                  + ", ".join(f"{r:.3f}" for r in ratios))
    for mode in MODES:
        print(f"turn p50 (ms), {mode:>12}: "
              + " ".join(f"{v:.0f}" for v in by_mode[mode][0]["turn_p50_ms"]))
    sys.exit(0)


if __name__ == "__main__":
    main()
