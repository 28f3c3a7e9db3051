"""A filter's chunks pre-ranked on sign bits against the HNSW walk, paired (bench/README.md).

    .venv/bin/python -m bench.sign_bits \
        --database-url postgres://postgres@127.0.0.1:5432/bench_vectors08
    .venv/bin/python -m bench.sign_bits            # pgserver's pgvector 0.6.2

As bench/iterative_scans.py, the setting paired being VECTOR_SEARCH_SIGNS_MAX_CHUNKS (at its
value: the filtered cases' 20,000 and 10,000 chunks pre-ranked on sign bits,
vector_stores/sign_bits.py; 0: the HNSW path, iterative from pgvector 0.8): p50 / p99 of
each, the fewest results, how many results both share, and, vector-only, how many of the
exact top 10s' distances each found.
"""
from bench.iterative_scans import paired
from bench.vector_stores import corpus_options, run_on_corpus


def bench_pairs(args, store_id: str) -> list[dict]:
    return paired(store_id, args.queries, "VECTOR_SEARCH_SIGNS_MAX_CHUNKS", 0)


def main(argv=None) -> None:
    run_on_corpus(corpus_options(__doc__.split("\n")[0]).parse_args(argv), bench_pairs)


if __name__ == "__main__":
    main()
