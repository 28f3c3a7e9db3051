"""The vector ranking of a filter's chunks by an exact pre-ranking on sign bits, instead of
the HNSW index's walk.

Each chunk keeps its embedding's sign bits (`signs`: bit i is 1 where coordinate i > 0;
written at ingestion; the chunks stored before migration 0002 are signed by
sign_backfill.py's periodic task, and re-ranked exactly until then), read by an index-only
scan of `vector_store_chunks_signs` (store_file_id INCLUDE id, signs: ~70 bytes a chunk at
256 dimensions, 7.5 MB for 100,000). A filter's chunks are all pre-ranked on them, then the best
RERANK_FACTOR x candidates re-ranked by their exact cosine distance (rows by primary key):

- the pre-ranking is the chunk's signs' *weighted* agreement with the query's (asymmetric:
  the query's coordinates kept at LEVELS levels of magnitude, the chunk's bits): the chunks
  whose signs agree with the query's largest coordinates first. Plain Hamming distance (every
  coordinate alike) found 84 of the exact top 10s' 600 distances on the bench (the fake
  embeddings are non-negative and sparse: a chunk's count of set bits outweighed its
  overlap with the query), the weighted one 462-493 (the HNSW walk 262-273);
- its SQL is `bit_count(signs & mask)` per (level, sign) of the query's coordinates: one
  term for the bench's queries (every coordinate one level), at most 2 x 2 for a dense one
  (~1.5-2 ms each on 20,000 chunks). On dense signed vectors (the bench's rotated by a
  random orthogonal transform: the same distances, so the same exact top 10s) it finds 957
  of their 1,000 distances with 2 levels, 959 with 3 (~4.7 terms), Hamming 873;
- it needs nothing of pgvector (`bit_count` is PostgreSQL 14's), so pgvector 0.6.2 runs
  it as 0.8 does.

Taken for a filter's scope of more than VECTOR_SEARCH_EXACT_MAX_CHUNKS and at most
VECTOR_SEARCH_SIGNS_MAX_CHUNKS chunks (ranking.nearest_statement; the scope's size is known
from the files' statement): the whole scope is read, ~0.2-0.3 µs a chunk, where the HNSW
walk's cost grows as the filter's share shrinks. Its gain (paired against the HNSW path,
100 queries on 100,000 chunks, pgvector 0.8.6 and 0.6.2): hybrid p50 1.27-1.37x with 1
file in 5 (20,000 chunks), 1.92-2.13x with 1 in 10; nearer the exact ranking (771 / 808
of the exact top 10s' 1,000 distances against 444-501); at 40,000 chunks it lost (0.72x
vector-only), hence the bound. bench/README.md, "Sign bits".
"""
from django.conf import settings
from django.db import models
from pgvector import Vector

from .statements import Statement

RERANK_FACTOR = 10  # the pre-ranking's best RERANK_FACTOR x candidates are re-ranked exactly
LEVELS = 2  # a query coordinate's weight: round(2 |q| / max |q|), 0 (left out) to 2
TABLE = "vector_store_chunks"


class SignBitsField(models.Field):
    """A `bit varying` column holding an embedding's sign bits as a '0101…' string."""

    def db_type(self, connection) -> str:
        return "bit varying"


def sign_bits(vector: list[float]) -> str:
    """An embedding's sign bits as `bit varying` reads them: '1' where a coordinate is > 0
    (pgvector's binary_quantize, which 0.6.2 lacks; sign_backfill.SIGNS_SQL computes the
    same in SQL)."""
    return "".join("1" if value > 0 else "0" for value in vector)


def score_terms(vector: list[float]) -> list[tuple[int, str]]:
    """The query's pre-ranking as (weight, mask) terms: a chunk scores the sum of weight x
    bit_count(signs & mask), higher first (the query's coordinates of one magnitude level
    and one sign in each mask, weighted +level where the query is positive, -level where
    it is negative: the weighted agreement of the chunk's signs with the query's)."""
    top = max((abs(value) for value in vector), default=0.0)
    if not top:
        return []
    levels = [round(LEVELS * abs(value) / top) for value in vector]
    terms = []
    for level in range(LEVELS, 0, -1):
        for sign in (1, -1):
            mask = "".join("1" if weight == level and value * sign > 0 else "0"
                           for weight, value in zip(levels, vector))
            if "1" in mask:
                terms.append((sign * level, mask))
    return terms


def signs_statement(file_array: str, vector: list[float], candidates: int) -> Statement:
    """The statement of the `candidates` chunks of the files (`file_array`, an int array
    literal) nearest the query: every chunk of the files pre-ranked on its sign bits, the
    best RERANK_FACTOR x candidates by exact cosine distance, nearest first (ties by id, as
    the exact ranking orders them); a chunk orthogonal to the query or further left out.
    The files' chunks not yet signed (NULL: stored before the column, until
    sign_backfill.py signs them) are re-ranked exactly with them, never missed: read from
    the partial index of the unsigned chunks, empty once the backfill is done."""
    terms = score_terms(vector)
    score = " + ".join(f"{weight} * bit_count(signs & %s::bit varying)" for weight, _ in terms)
    order = f"{score or '0'} DESC NULLS LAST, id"
    text = Vector(vector).to_text()
    return Statement(
        f"WITH near AS MATERIALIZED ((SELECT id FROM {TABLE} "
        f"WHERE store_file_id = ANY(%s::bigint[]) ORDER BY {order} LIMIT %s) "
        f"UNION ALL (SELECT id FROM {TABLE} "
        f"WHERE store_file_id = ANY(%s::bigint[]) AND signs IS NULL)) "
        f"SELECT c.id, c.embedding <=> %s::vector AS distance FROM {TABLE} AS c "
        f"WHERE c.id IN (SELECT id FROM near) AND (c.embedding <=> %s::vector) < %s "
        f"ORDER BY distance, c.id LIMIT %s",
        [file_array, *(mask for _, mask in terms), RERANK_FACTOR * candidates, file_array,
         text, text, 1.0, candidates])


def takes_signs(narrowed: bool, chunk_count: int) -> bool:
    """Whether a scope is ranked on sign bits: a filter's, larger than the exact search's
    and at most VECTOR_SEARCH_SIGNS_MAX_CHUNKS (0: never)."""
    return narrowed and settings.VECTOR_SEARCH_EXACT_MAX_CHUNKS < chunk_count \
        <= settings.VECTOR_SEARCH_SIGNS_MAX_CHUNKS
