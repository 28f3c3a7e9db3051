"""The text ranking on a side connection against both rankings in turn, paired (bench/README.md).

    .venv/bin/python -m bench.side_reads --pgdata /tmp/gateway-bench-vectors/pgdata
    .venv/bin/python -m bench.side_reads --timers    # where a search's time goes, per part

On the store of bench/vector_stores.py (`--chunks`, loaded there first, or here when
missing), each hybrid case of it (no filter, `eq`, `and`) runs `search_stores` on the same
`--queries` queries twice per query: the rankings at once (VECTOR_SEARCH_SIDE_THREADS at
its setting: the text ranking on a side thread's connection, vector_stores/side_reads.py)
and in turn (0: both on the caller's connection, their statements in one round trip, as
before), which one first alternating query by query. p50 / p99 of each, the p50 ratio,
whether every query's results (chunks and scores) are the same both ways, the load average.

`--timers`: the searches at once only, each part timed in the process (the functions of
vector_stores/search.py wrapped here): the first round trip, the text ranking on its side
thread, the embedding, the vector ranking's round trip, the wait for the text ranking
after it, the results' round trip; p50 of each, and this process's CPU per search (every
thread's: the ORM building the statements, psycopg binding them, the embedding's HTTP
client).
"""
import argparse
import os
import statistics
import time
from collections import defaultdict
from pathlib import Path

from bench.iterative_scans import key, percentile
from bench.vector_stores import (CASES, CONTENT_WORDS, load_chunks, setup_django,
                                 start_fake_upstream, tenant, words)


def queries_of(count: int) -> list[str]:
    import random

    rng = random.Random(3)  # bench/vector_stores.py's queries
    return [words(rng, rng.randint(3, 5), CONTENT_WORDS) for _ in range(count)]


def bench_pairs(args, store_id: str) -> list[dict]:
    from django.conf import settings

    from vector_stores.search import search_stores

    threads = settings.VECTOR_SEARCH_SIDE_THREADS
    owner, queries, rows = tenant(), queries_of(args.queries), []
    for case, filters in CASES.items():
        def search(query, side_threads):
            settings.VECTOR_SEARCH_SIDE_THREADS = side_threads
            started = time.perf_counter()
            results = search_stores(owner.id, [store_id], query, filters=filters)
            return 1000 * (time.perf_counter() - started), key(results)

        for query in queries[:10]:  # warm-up
            search(query, threads), search(query, 0)
        times, found = {"at once": [], "in turn": []}, {"at once": [], "in turn": []}
        for n, query in enumerate(queries):
            order = ("at once", "in turn") if n % 2 == 0 else ("in turn", "at once")
            for mode in order:
                took, results = search(query, threads if mode == "at once" else 0)
                times[mode].append(took)
                found[mode].append(results)
        settings.VECTOR_SEARCH_SIDE_THREADS = threads
        row = {"case": case, "load": os.getloadavg()[0]}
        for mode in times:
            row[mode] = (round(statistics.median(times[mode]), 1), percentile(times[mode], 0.99))
        row["p50_ratio"] = round(row["in turn"][0] / row["at once"][0], 2)
        row["same_results"] = sum(a == b for a, b in zip(found["at once"], found["in turn"]))
        row["results_min"] = min(len(results) for results in found["at once"])
        rows.append(row)
        print(row, flush=True)
    return rows


def bench_timers(args, store_id: str) -> None:
    from vector_stores import search, side_reads

    spent: dict[str, list[float]] = defaultdict(list)

    def timed(module, name, label):
        function = getattr(module, name)

        def wrapper(*a, **k):
            started = time.perf_counter()
            try:
                return function(*a, **k)
            finally:
                spent[label].append(1000 * (time.perf_counter() - started))
        setattr(module, name, wrapper)
        return function

    originals = [(search, "_results", timed(search, "_results", "results")),
                 (search, "embed_texts", timed(search, "embed_texts", "embedding")),
                 (search, "_text_ranked", timed(search, "_text_ranked", "text ranking (side)")),
                 (search, "_vector_ranked", timed(search, "_vector_ranked",
                                                  "embedding + vector ranking")),
                 (side_reads.SideRead, "result", timed(side_reads.SideRead, "result",
                                                       "wait for the text ranking")),
                 (side_reads.SideRead, "__init__", timed(side_reads.SideRead, "__init__",
                                                         "side read submitted"))]
    owner, queries = tenant(), queries_of(args.queries)
    try:
        for case, filters in CASES.items():
            for query in queries[:10]:
                search.search_stores(owner.id, [store_id], query, filters=filters)
            spent.clear()
            cpu = time.process_time()
            for query in queries:
                started = time.perf_counter()
                search.search_stores(owner.id, [store_id], query, filters=filters)
                spent["whole search"].append(1000 * (time.perf_counter() - started))
            spent["this process's CPU per search"] = [
                1000 * (time.process_time() - cpu) / len(queries)]
            print(case, {label: round(statistics.median(values), 1)
                         for label, values in spent.items()},
                  "load", os.getloadavg()[0], flush=True)
    finally:
        for module, name, function in originals:
            setattr(module, name, function)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pgdata", default="/tmp/gateway-bench-vectors/pgdata")
    parser.add_argument("--database-url", default="")
    parser.add_argument("--dims", type=int, default=256)
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--timers", action="store_true")
    args = parser.parse_args(argv)
    Path(args.pgdata).parent.mkdir(parents=True, exist_ok=True)
    upstream, url = start_fake_upstream(Path(args.pgdata).parent / "fake_upstream.log")
    try:
        setup_django(args, url)
        print("load", os.getloadavg(), flush=True)
        store_id = load_chunks(args)
        bench_timers(args, store_id) if args.timers else bench_pairs(args, store_id)
        print("load", os.getloadavg(), flush=True)
    finally:
        upstream.terminate()
        upstream.wait(10)


if __name__ == "__main__":
    main()
