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
import os
import statistics
import time
from collections import defaultdict

from bench.iterative_scans import key, percentile
from bench.vector_stores import CASES, corpus_options, run_on_corpus, search_queries, tenant


def bench_pairs(args, store_id: str) -> list[dict]:
    from django.conf import settings

    from vector_stores.search import search_stores

    threads = settings.VECTOR_SEARCH_SIDE_THREADS
    owner, queries, rows = tenant(), search_queries(args.queries), []
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
    owner, queries = tenant(), search_queries(args.queries)
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
    parser = corpus_options(__doc__.split("\n")[0])
    parser.add_argument("--timers", action="store_true")
    args = parser.parse_args(argv)
    run_on_corpus(args, bench_timers if args.timers else bench_pairs)


if __name__ == "__main__":
    main()
