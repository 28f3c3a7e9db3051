"""The two rankings a search fuses, run on the chunks of the files it may return.

The attribute filter is applied to the store files first (a few thousand rows at most
per store), and the chunk queries then name those files' ids: with the filter as a join,
the planner misjudged the JSON filter's selectivity and chose nested loops over whole
stores (120-380 ms for 100,000 chunks in 1,000 files, loaded machine).

The vector ranking: pgvector 0.6 filters an HNSW scan's rows after the scan (an index
scan finds at most `hnsw.ef_search` rows before a WHERE drops some), so files holding few
chunks together (VECTOR_SEARCH_EXACT_MAX_CHUNKS) are searched exactly (their rows by the
file index, sorted; not the HNSW index); otherwise the HNSW index gives the table's nearest
chunks, enough of them that about `candidates` should belong to the files (ef_search grown
by the files' share of the table, 1.5 times; a share so small that this passes
HNSW_MAX_CANDIDATES is searched exactly), those of the files are kept, and when fewer than
`candidates` remain the files are searched exactly after all.

The text ranking ranks the chunks holding all the query's words first, then those holding
any; each of the two ranks at most TEXT_MATCHES_RANKED matches (the first the GIN index
finds): `ts_rank` reads every match, and a query of common words matches a good part of a
large store (48 ms for ~15,000 matches of 100,000 chunks, loaded machine).
"""
import math
import re
from dataclasses import dataclass

from django.conf import settings
from django.contrib.postgres.search import SearchQuery, SearchRank
from django.db import connection, transaction
from django.db.models import F, Q
from pgvector.django import CosineDistance

from .models import Chunk, VectorStoreFile

RRF_K = 60
HNSW_MAX_CANDIDATES = 1000
TEXT_MATCHES_RANKED = 2000
MAX_DISTANCE = 1.0  # a chunk no closer than orthogonal shares nothing with the query
WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Scope:
    """The files a search may return: {pk: chunk count}, and the Q naming their chunks
    (by store when no filter narrowed them: an IN list of 1,000 file ids cost the text
    ranking 1.39x its time, paired runs on 100,000 chunks)."""

    files: dict[int, int]
    chunks: Q


def searched_files(store_ids: list[str], where) -> Scope:
    """The completed files of the stores passing the attribute filter."""
    files = VectorStoreFile.objects.filter(store_id__in=store_ids, status="completed")
    if where is None:
        return Scope(dict(files.values_list("pk", "chunk_count")), Q(store_id__in=store_ids))
    found = dict(files.filter(where).values_list("pk", "chunk_count"))
    return Scope(found, Q(store_file_id__in=list(found)))


def vector_ranking(scope: Scope, vector: list[float],
                   candidates: int) -> list[tuple[int, float]]:
    """The `candidates` chunks of the scope nearest the query's vector: (id, distance)."""
    if not scope.files:
        return []
    chunks = sum(scope.files.values())
    if chunks > settings.VECTOR_SEARCH_EXACT_MAX_CHUNKS:
        wanted = math.ceil(1.5 * candidates * _table_rows() / chunks)
        if wanted <= HNSW_MAX_CANDIDATES:
            nearest = _by_index(scope.files, vector, candidates, wanted)
            if len(nearest) >= candidates:
                return nearest
    return _exact(scope, vector, candidates)


def _exact(scope, vector, candidates) -> list[tuple[int, float]]:
    with transaction.atomic():
        with connection.cursor() as cursor:  # not the HNSW index (it would filter after)
            cursor.execute("SET LOCAL enable_indexscan = off")
        rows = (Chunk.objects.filter(scope.chunks)
                .annotate(distance=CosineDistance("embedding", vector))
                .order_by("distance", "id").values_list("id", "distance")[:candidates])
        return [(chunk_id, distance) for chunk_id, distance in rows if distance < MAX_DISTANCE]


def _by_index(files, vector, candidates, wanted) -> list[tuple[int, float]]:
    with transaction.atomic():
        with connection.cursor() as cursor:  # SET LOCAL: this transaction only
            cursor.execute(f"SET LOCAL hnsw.ef_search = {max(40, wanted)}")
        rows = (Chunk.objects.annotate(distance=CosineDistance("embedding", vector))
                .order_by("distance").values_list("id", "distance", "store_file_id")[:wanted])
        nearest = [(chunk_id, distance) for chunk_id, distance, file_pk in rows
                   if file_pk in files and distance < MAX_DISTANCE]
    nearest.sort(key=lambda pair: (pair[1], pair[0]))
    return nearest[:candidates]


def _table_rows() -> float:
    """The chunk table's row count as the planner estimates it (no count)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE relname = %s",
                       [Chunk._meta.db_table])
        row = cursor.fetchone()
    return max(1.0, row[0]) if row else 1.0


def text_ranking(scope: Scope, query: str, candidates: int) -> list[int]:
    """The `candidates` chunks of the scope best matching the query's words: those
    holding all of them first, then those holding any."""
    words = WORD.findall(query.lower())
    if not words or not scope.files:
        return []
    ranked = _ranked_matches(scope, " & ".join(words), candidates)
    if len(ranked) < candidates and len(words) > 1:
        seen = set(ranked)
        ranked += [chunk_id for chunk_id in _ranked_matches(scope, " | ".join(words),
                                                            candidates)
                   if chunk_id not in seen][:candidates - len(ranked)]
    return ranked


def _ranked_matches(scope: Scope, raw_query: str, candidates: int) -> list[int]:
    """The best `candidates` of the first TEXT_MATCHES_RANKED matches, ranked in the scan
    that finds them and sorted around it. Ranking them around a subquery of their ids read
    each match's row twice (the scan, then by primary key): the text ranking 1.24-1.39x
    slower at p50, the hybrid search 1.08-1.18x; sorting the pairs in Python instead of
    SQL: 1.03-1.32x slower (100 queries on 100,000 chunks, alternating the order, the same
    rankings; bench/README.md)."""
    tsquery = SearchQuery(raw_query, search_type="raw", config="english")
    matches = (Chunk.objects.filter(scope.chunks, tsv=tsquery)
               .annotate(rank=SearchRank(F("tsv"), tsquery))
               .values_list("id", "rank")[:TEXT_MATCHES_RANKED])
    sql, params = matches.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT matches.id FROM ({sql}) AS matches "
                       "ORDER BY matches.rank DESC, matches.id LIMIT %s", [*params, candidates])
        return [chunk_id for chunk_id, in cursor.fetchall()]


def fused(*rankings: list[int]) -> dict[int, float]:
    """Reciprocal rank fusion, divided by the best possible sum (1.0: first in all)."""
    best = len(rankings) / (RRF_K + 1)
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, chunk_id in enumerate(ranking, start=1):
            scores[chunk_id] = scores.get(chunk_id, 0.0) + 1.0 / (RRF_K + rank)
    return {chunk_id: score / best for chunk_id, score in scores.items()}
