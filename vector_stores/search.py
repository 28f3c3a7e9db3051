"""Searching a tenant's vector stores: hybrid ranking of chunks on the real indexes.

Two rankings of the chunks of the named stores that pass the attribute `filters`:
- by the cosine distance of their embedding to the query's (pgvector, HNSW index; its
  `hnsw.ef_search` raised to the candidates wanted so filtered searches still find enough);
- by Postgres full-text search (`english` configuration, any of the query's words,
  `ts_rank`).
(A chunk whose embedding is orthogonal to the query's or further, distance >= 1, is not
in the vector ranking: it shares nothing with the query.)
They are fused by reciprocal rank (RRF, k=60): a chunk's score is the sum of 1/(60 + rank)
over the rankings it is in, divided by the best possible sum (2/61), so 1.0 means first in
both. `ranking_options.ranker`: `auto` or `default-2024-11-15` is that hybrid; `none` is the
vector ranking alone, scored by cosine similarity (1 - distance). `score_threshold` drops
results scoring below it; ties are ordered by chunk (file order). One result per chunk.

Sync (ORM, and one sync HTTP call to embed the query): the worker calls it in a thread.
The stores are the tenant's or VectorStoreNotFound; bad parameters raise
InvalidSearchRequest; an embedding upstream failure raises EmbeddingFailed.
"""
import re
from dataclasses import dataclass
from datetime import timedelta

from django.contrib.postgres.search import SearchQuery, SearchRank
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone
from pgvector.django import CosineDistance

from .embedding import EmbeddingFailed, embed_texts
from .filters import InvalidSearchRequest, filter_q
from .models import Chunk, VectorStore

__all__ = ["SearchResult", "VectorStoreNotFound", "InvalidSearchRequest", "EmbeddingFailed",
           "check_search", "search_stores"]

RRF_K = 60
RANKERS = ("auto", "default-2024-11-15", "none")
MAX_RESULTS = 50
MIN_CANDIDATES = 40
ACTIVE_RESOLUTION = timedelta(minutes=1)  # last_active_at is written at most this often
MAX_DISTANCE = 1.0  # a chunk no closer than orthogonal shares nothing with the query
WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class SearchResult:
    file_id: str
    filename: str
    score: float
    attributes: dict
    content: list[dict]   # [{"type": "text", "text": "..."}]


class VectorStoreNotFound(Exception):
    """A vector store id unknown to this tenant (another tenant's included)."""

    def __init__(self, store_id: str):
        super().__init__(f"Vector store with id '{store_id}' not found.")
        self.store_id = store_id


def check_search(tenant_id: int, vector_store_ids: list[str], *, max_num_results: int = 10,
                 filters: dict | None = None, ranking_options: dict | None = None) -> None:
    """What search_stores checks before it calls anything, on its own (e.g. when a request
    naming a file_search tool is admitted): InvalidSearchRequest or VectorStoreNotFound."""
    _checked(tenant_id, vector_store_ids, max_num_results, filters, ranking_options)


def search_stores(tenant_id: int, vector_store_ids: list[str], query: str, *,
                  max_num_results: int = 10, filters: dict | None = None,
                  ranking_options: dict | None = None) -> list[SearchResult]:
    """The best chunks of the tenant's stores for `query`, best first."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidSearchRequest("'query' must be a non-empty string.")
    ranker, threshold, where = _checked(tenant_id, vector_store_ids, max_num_results, filters,
                                        ranking_options)
    store_ids = _touched(list(dict.fromkeys(vector_store_ids)))
    [vector] = embed_texts([query])
    chunks = Chunk.objects.filter(store_id__in=store_ids)
    if where is not None:
        chunks = chunks.filter(where)
    candidates = max(MIN_CANDIDATES, 4 * max_num_results)
    by_vector = _vector_ranking(chunks, vector, candidates)
    if ranker == "none":
        scores = {chunk_id: max(0.0, min(1.0, 1.0 - distance)) for chunk_id, distance in by_vector}
    else:
        scores = _fused([chunk_id for chunk_id, _ in by_vector],
                        _text_ranking(chunks, query, candidates))
    ranked = sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))
    ranked = [(chunk_id, score) for chunk_id, score in ranked if score >= threshold]
    return _results(ranked[:max_num_results])


def _checked(tenant_id, vector_store_ids, max_num_results, filters, ranking_options):
    if type(max_num_results) is not int or not 1 <= max_num_results <= MAX_RESULTS:
        raise InvalidSearchRequest(f"'max_num_results' must be an integer from 1 to "
                                   f"{MAX_RESULTS}.")
    ranker, threshold = _ranking(ranking_options)
    where = filter_q(filters) if filters is not None else None
    _tenant_stores(tenant_id, vector_store_ids)
    return ranker, threshold, where


def _ranking(options) -> tuple[str, float]:
    if options is None:
        return "auto", 0.0
    if not isinstance(options, dict) or not set(options) <= {"ranker", "score_threshold"}:
        raise InvalidSearchRequest("'ranking_options' must be an object with 'ranker' and/or "
                                   "'score_threshold'.")
    ranker = options.get("ranker", "auto")
    if ranker not in RANKERS:
        raise InvalidSearchRequest(f"'ranking_options.ranker' must be one of "
                                   f"{', '.join(RANKERS)}.")
    threshold = options.get("score_threshold", 0.0)
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) \
            or not 0 <= threshold <= 1:
        raise InvalidSearchRequest("'ranking_options.score_threshold' must be a number from "
                                   "0 to 1.")
    return ranker, float(threshold)


def _tenant_stores(tenant_id: int, store_ids) -> None:
    if not isinstance(store_ids, list) or not store_ids \
            or not all(isinstance(store_id, str) for store_id in store_ids):
        raise InvalidSearchRequest("'vector_store_ids' must be a non-empty array of ids.")
    wanted = list(dict.fromkeys(store_ids))
    found = set(VectorStore.objects.filter(tenant_id=tenant_id, id__in=wanted)
                .values_list("id", flat=True))
    for store_id in wanted:
        if store_id not in found:
            raise VectorStoreNotFound(store_id)


def _touched(store_ids: list[str]) -> list[str]:
    """The stores, their last_active_at now (written at most once a minute)."""
    now = timezone.now()
    VectorStore.objects.filter(id__in=store_ids, last_active_at__lt=now - ACTIVE_RESOLUTION) \
        .update(last_active_at=now)
    return store_ids


def _vector_ranking(chunks, vector: list[float], candidates: int) -> list[tuple[int, float]]:
    with transaction.atomic():
        with connection.cursor() as cursor:  # SET LOCAL: this transaction only
            cursor.execute(f"SET LOCAL hnsw.ef_search = {min(1000, 2 * candidates)}")
        rows = (chunks.annotate(distance=CosineDistance("embedding", vector))
                .filter(distance__lt=MAX_DISTANCE)
                .order_by("distance", "id").values_list("id", "distance")[:candidates])
        return list(rows)


def _text_ranking(chunks, query: str, candidates: int) -> list[int]:
    words = WORD.findall(query.lower())
    if not words:
        return []
    tsquery = SearchQuery(" | ".join(words), search_type="raw", config="english")
    rows = (chunks.filter(tsv=tsquery).annotate(rank=SearchRank(F("tsv"), tsquery))
            .order_by("-rank", "id").values_list("id", flat=True)[:candidates])
    return list(rows)


def _fused(*rankings: list[int]) -> dict[int, float]:
    best = len(rankings) / (RRF_K + 1)
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, chunk_id in enumerate(ranking, start=1):
            scores[chunk_id] = scores.get(chunk_id, 0.0) + 1.0 / (RRF_K + rank)
    return {chunk_id: score / best for chunk_id, score in scores.items()}


def _results(ranked: list[tuple[int, float]]) -> list[SearchResult]:
    rows = {row["id"]: row for row in Chunk.objects.filter(id__in=[i for i, _ in ranked]).values(
        "id", "text", "store_file__file_id", "store_file__file__filename",
        "store_file__attributes")}
    return [SearchResult(file_id=rows[chunk_id]["store_file__file_id"],
                         filename=rows[chunk_id]["store_file__file__filename"],
                         score=round(score, 6),
                         attributes=rows[chunk_id]["store_file__attributes"] or {},
                         content=[{"type": "text", "text": rows[chunk_id]["text"]}])
            for chunk_id, score in ranked if chunk_id in rows]
