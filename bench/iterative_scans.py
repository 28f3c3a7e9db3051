"""pgvector >= 0.8's iterative HNSW scans against the over-fetch, paired (bench/README.md).

    .venv/bin/python -m bench.iterative_scans \
        --database-url postgres://postgres@127.0.0.1:5432/bench_vectors08
    .venv/bin/python -m bench.iterative_scans            # pgserver's pgvector 0.6.2: both "off"

The filtered cases' scopes (20,000 and 10,000 chunks) are ranked on sign bits by default
(vector_stores/sign_bits.py), the same on and off here: VECTOR_SEARCH_SIGNS_MAX_CHUNKS=0 in
the environment compares the HNSW paths.

On the store of bench/vector_stores.py (`--chunks`, loaded there first, or here when
missing), each case of it (hybrid and vector-only; no filter, `eq`, `and`) runs
`search_stores` on the same `--queries` queries twice per query: with iterative scans
(VECTOR_SEARCH_MAX_SCAN_TUPLES at its setting) and without (0: the over-fetch of older
pgvector), which one first alternating query by query. p50 / p99 of each, the p50 ratio,
the fewest results a search returned, and the quality: how many of the top results each
has of the exact ranking's scores (vector-only: every chunk of the scope compared; scores,
not chunks, as the fake embeddings tie often), how many results on and off share, and the
load average.
"""
import os
import statistics
import time
from collections import Counter

from bench.vector_stores import CASES, corpus_options, run_on_corpus, search_queries, tenant


def key(results) -> list[tuple]:
    return [(result.file_id, result.content[0]["text"], result.score) for result in results]


def shared(a: list, b: list) -> int:
    """How many results `a` and `b` share."""
    return len(set(a) & set(b))


def same_scores(a: list, b: list) -> int:
    """How many of `a`'s scores `b` has too: the hashed bag-of-words embeddings tie often
    (many chunks at one distance), and which of the tied chunks a ranking returns is
    arbitrary (the exact one breaks ties by id, the index by its graph)."""
    return sum((Counter(score for *_, score in a) & Counter(score for *_, score in b)).values())


def percentile(times: list[float], share: float) -> float:
    ordered = sorted(times)
    return round(ordered[int(share * (len(ordered) - 1))], 1)


def bench_pairs(args, store_id: str) -> list[dict]:
    return paired(store_id, args.queries, "VECTOR_SEARCH_MAX_SCAN_TUPLES", 0)


def paired(store_id: str, count: int, setting: str, off) -> list[dict]:
    """Each case's searches with `setting` at its value ("on") and at `off`, paired."""
    from django.conf import settings

    from vector_stores.search import search_stores

    on_value = getattr(settings, setting)
    owner = tenant()
    queries = search_queries(count)
    rows = []
    for ranker in ("auto", "none"):
        for case, filters in CASES.items():
            def search(query, value):
                setattr(settings, setting, value)
                started = time.perf_counter()
                results = search_stores(owner.id, [store_id], query, filters=filters,
                                        ranking_options={"ranker": ranker})
                return 1000 * (time.perf_counter() - started), key(results)

            for query in queries[:10]:  # warm-up
                search(query, on_value), search(query, off)
            times = {"on": [], "off": []}
            found = {"on": [], "off": []}
            for n, query in enumerate(queries):
                order = ("on", "off") if n % 2 == 0 else ("off", "on")
                for mode in order:
                    took, results = search(query, on_value if mode == "on" else off)
                    times[mode].append(took)
                    found[mode].append(results)
            setattr(settings, setting, on_value)
            row = {"ranker": ranker, "case": case, "load": os.getloadavg()[0]}
            for mode in ("on", "off"):
                row[mode] = (round(statistics.median(times[mode]), 1),
                             percentile(times[mode], 0.99))
                row[f"results_min_{mode}"] = min(len(found_) for found_ in found[mode])
            row["p50_ratio"] = round(row["off"][0] / row["on"][0], 2)
            row["on_off_shared"] = sum(shared(a, b) for a, b in zip(found["on"], found["off"]))
            if ranker == "none":
                exact = exact_results(owner.id, store_id, queries, filters)
                for mode in ("on", "off"):
                    row[f"exact_scores_{mode}"] = sum(
                        same_scores(a, b) for a, b in zip(found[mode], exact))
            row["of"] = sum(len(results) for results in found["on"])
            rows.append(row)
            print(row, flush=True)
    return rows


def exact_results(tenant_id: int, store_id: str, queries: list[str], filters) -> list[list]:
    """Each query's vector-only results with every chunk of the scope compared."""
    from django.conf import settings

    from vector_stores.search import search_stores

    exact_max = settings.VECTOR_SEARCH_EXACT_MAX_CHUNKS
    settings.VECTOR_SEARCH_EXACT_MAX_CHUNKS = 10**9
    try:
        return [key(search_stores(tenant_id, [store_id], query, filters=filters,
                                  ranking_options={"ranker": "none"})) for query in queries]
    finally:
        settings.VECTOR_SEARCH_EXACT_MAX_CHUNKS = exact_max


def main(argv=None) -> None:
    run_on_corpus(corpus_options(__doc__.split("\n")[0]).parse_args(argv), bench_pairs)


if __name__ == "__main__":
    main()
