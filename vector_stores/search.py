"""Searching a tenant's vector stores: hybrid ranking of chunks on the real indexes.

Two rankings (ranking.py) of the chunks of the named stores' files that pass the
attribute `filters`:
- by the cosine distance of their embedding to the query's (pgvector: the HNSW index for
  large stores, an exact scan for small ones or selective filters); a chunk orthogonal to
  the query or further (distance >= 1) shares nothing with it and is left out;
- by Postgres full-text search (`english` configuration, `ts_rank`: the chunks holding
  all the query's words, then two or more, then any; text_ranking.py).
They are fused by reciprocal rank (RRF, k=60): a chunk's score is the sum of 1/(60 + rank)
over the rankings it is in, divided by the best possible sum (2/61), so 1.0 means first in
both. `ranking_options.ranker`: `auto` or `default-2024-11-15` is that hybrid; `none` is the
vector ranking alone, scored by cosine similarity (1 - distance). `score_threshold` drops
results scoring below it; ties are ordered by chunk (file order). One result per chunk.

The rankings at once: outside a transaction the text ranking runs on a side thread's own
connection (side_reads.py), started before the query's embedding is asked for (it needs
only the query's lexemes), while this thread embeds the query and runs the vector ranking:
the search waits for the longer of the two, not their sum. Whole bench runs against the
sequential path (100 queries on 100,000 chunks, the same results on every query;
bench/README.md, "The two rankings at once"): hybrid p50 1.16-1.27x at a load of ~2-3.5 on
this 2-core machine, nothing at 4-5.5 (no idle core: both sides compete for the CPU; with
VECTOR_SEARCH_SIDE_THREADS 0 a CPU-bound host keeps the one round trip). Inside a
transaction (a second connection would not see its rows) both rankings' statements go in
one round trip after the embedding, as before.

Sync (ORM, and one sync HTTP call to embed the query): the worker calls it in a thread.
The stores are the tenant's or VectorStoreNotFound; bad parameters raise
InvalidSearchRequest; an embedding upstream failure raises EmbeddingFailed.
"""
from dataclasses import dataclass
from datetime import timedelta
from functools import lru_cache

from django.db import connection
from django.utils import timezone

from .embedding import EmbeddingFailed, embed_texts
from .filters import InvalidSearchRequest, check_filter
from .models import Chunk, VectorStore, VectorStoreFile
from .ranking import (TABLE_ROWS, files_statement, fused, nearest_statement, searched_files,
                      vector_ranking)
from . import side_reads
from .statements import Statement, any_of, int_array, run_together
from .text_ranking import first_statement, lexemes_statement, text_ranking

__all__ = ["SearchResult", "VectorStoreNotFound", "InvalidSearchRequest", "EmbeddingFailed",
           "check_search", "search_stores"]

RANKERS = ("auto", "default-2024-11-15", "none")
MAX_RESULTS = 50
MIN_CANDIDATES = 40
ACTIVE_RESOLUTION = timedelta(minutes=1)  # last_active_at is written at most this often


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
    """The best chunks of the tenant's stores for `query`, best first. Three round trips
    to Postgres on the critical path where the rankings find enough (statements.py): the
    stores, their files, the table's size and the query's lexemes; the vector ranking
    (the text ranking at the same time on a side connection, or in the same round trip
    inside a transaction); the results."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidSearchRequest("'query' must be a non-empty string.")
    ranker, threshold = _parameters(max_num_results, filters, ranking_options)
    wanted = _store_ids(vector_store_ids)
    stores, files, table_rows, lexemes = run_together(
        _stores_statement(tenant_id, wanted), files_statement(wanted, filters), TABLE_ROWS,
        lexemes_statement(query))
    _touched(_found(stores, wanted))
    scope = searched_files(wanted, filters, files)
    candidates = max(MIN_CANDIDATES, 4 * max_num_results)
    if ranker == "none":
        vector_ranked = _vector_ranked(query, scope, candidates, table_rows)
        scores = {chunk_id: max(0.0, min(1.0, 1.0 - distance))
                  for chunk_id, distance in vector_ranked}
    else:
        both = _ranked_at_once if side_reads.available() else _ranked_in_turn
        vector_ranked, text_ranked = both(query, scope, lexemes, candidates, table_rows)
        scores = fused([chunk_id for chunk_id, _ in vector_ranked], text_ranked)
    ranked = sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))
    ranked = [(chunk_id, score) for chunk_id, score in ranked if score >= threshold]
    return _results(ranked[:max_num_results])


def _vector_ranked(query, scope, candidates, table_rows) -> list[tuple[int, float]]:
    """The vector ranking alone: the query embedded, then its round trip."""
    [vector] = embed_texts([query])
    by_vector = nearest_statement(scope, vector, candidates, table_rows)
    nearest = run_together(by_vector)[0] if by_vector is not None else None
    return vector_ranking(scope, vector, candidates, nearest)


def _text_ranked(scope, lexemes, candidates) -> list[int]:
    """The text ranking alone: its round trip (two without a filter when the first tiers
    hold too few)."""
    by_text = first_statement(scope, lexemes, candidates)
    first = run_together(by_text)[0] if by_text is not None else None
    return text_ranking(scope, lexemes, candidates, first)


def _ranked_at_once(query, scope, lexemes, candidates, table_rows):
    """Both rankings, the text one on a side connection (side_reads.py) started before
    the query's embedding is asked for: (vector ranking, text ranking)."""
    by_text = side_reads.SideRead(_text_ranked, scope, lexemes, candidates)
    try:
        vector_ranked = _vector_ranked(query, scope, candidates, table_rows)
    except BaseException:
        by_text.cancel()
        raise
    return vector_ranked, by_text.result()


def _ranked_in_turn(query, scope, lexemes, candidates, table_rows):
    """Both rankings on the caller's connection, their first statements in one round
    trip after the query's embedding: (vector ranking, text ranking)."""
    [vector] = embed_texts([query])
    by_text = first_statement(scope, lexemes, candidates)
    by_vector = nearest_statement(scope, vector, candidates, table_rows)
    rows = iter(run_together(*[s for s in (by_text, by_vector) if s is not None]))
    first, nearest = (next(rows) if by_text else None), (next(rows) if by_vector else None)
    return (vector_ranking(scope, vector, candidates, nearest),
            text_ranking(scope, lexemes, candidates, first))


def _checked(tenant_id, vector_store_ids, max_num_results, filters, ranking_options):
    _parameters(max_num_results, filters, ranking_options)
    wanted = _store_ids(vector_store_ids)
    [stores] = run_together(_stores_statement(tenant_id, wanted))
    _found(stores, wanted)


def _parameters(max_num_results, filters, ranking_options):
    if type(max_num_results) is not int or not 1 <= max_num_results <= MAX_RESULTS:
        raise InvalidSearchRequest(f"'max_num_results' must be an integer from 1 to "
                                   f"{MAX_RESULTS}.")
    ranker, threshold = _ranking(ranking_options)
    if filters is not None:
        check_filter(filters)
    return ranker, threshold


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


def _store_ids(store_ids) -> list[str]:
    if not isinstance(store_ids, list) or not store_ids \
            or not all(isinstance(store_id, str) for store_id in store_ids):
        raise InvalidSearchRequest("'vector_store_ids' must be a non-empty array of ids.")
    return list(dict.fromkeys(store_ids))


def _stores_statement(tenant_id: int, wanted: list[str]) -> Statement:
    return Statement(_stores_sql(), [tenant_id, wanted])


@lru_cache(maxsize=1)
def _stores_sql() -> str:
    """The stores' statement, built by the ORM once per process: the tenant and the ids
    one array parameter, so its text never changes (see _results_sql)."""
    stores = VectorStore.objects.filter(tenant_id=0).filter(
        any_of(VectorStore, "id", [])).values_list("id", "last_active_at")
    return stores.query.sql_with_params()[0]


def _found(rows: list[tuple], wanted: list[str]) -> dict:
    """The named stores, {id: last_active_at}, or VectorStoreNotFound."""
    found = dict(rows)
    for store_id in wanted:
        if store_id not in found:
            raise VectorStoreNotFound(store_id)
    return {store_id: found[store_id] for store_id in wanted}


def _touched(last_active: dict) -> None:
    """The stores' last_active_at now (written at most once a minute: the UPDATE is sent
    only when one is older, not on every search)."""
    now = timezone.now()
    stale = [store_id for store_id, at in last_active.items() if at < now - ACTIVE_RESOLUTION]
    if stale:
        VectorStore.objects.filter(id__in=stale, last_active_at__lt=now - ACTIVE_RESOLUTION) \
            .update(last_active_at=now)


def _results(ranked: list[tuple[int, float]]) -> list[SearchResult]:
    [rows] = run_together(Statement(_results_sql(),
                                    [int_array(chunk_id for chunk_id, _ in ranked)]))
    attributes = VectorStoreFile._meta.get_field("attributes")
    rows = {chunk_id: (text, file_id, filename,
                       attributes.from_db_value(raw, None, connection) or {})
            for chunk_id, text, file_id, filename, raw in rows}
    return [SearchResult(file_id=rows[chunk_id][1], filename=rows[chunk_id][2],
                         score=round(score, 6), attributes=rows[chunk_id][3],
                         content=[{"type": "text", "text": rows[chunk_id][0]}])
            for chunk_id, score in ranked if chunk_id in rows]


@lru_cache(maxsize=1)
def _results_sql() -> str:
    """The results' statement, built by the ORM once per process (the chunks' ids one
    array parameter, so its text never changes): built per search with the stores' check,
    they cost 1.2-1.6 ms of CPU per search, 1.02-1.12x at p50 (paired, 100 queries, the
    same results; bench/README.md, "The two rankings at once")."""
    chunks = Chunk.objects.filter(any_of(Chunk, "id", [])).values_list(
        "id", "text", "store_file__file_id", "store_file__file__filename",
        "store_file__attributes")
    return chunks.query.sql_with_params()[0]

