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
`candidates` remain the files are searched exactly after all. The index's rows are kept
to the scope in SQL and sorted in Python: HNSW's order is approximate, and an ORDER BY
around the index scan was planned as already sorted on the distance (incremental sort).

Where the server's pgvector is 0.8 or later (its version read with the table's size, in
the same round trip: nothing cached to go stale), the index's path is an *iterative* scan
(`hnsw.iterative_scan = relaxed_order`): the scope's condition in the scan's WHERE,
pgvector walks on until `candidates` rows pass it or it has visited
VECTOR_SEARCH_MAX_SCAN_TUPLES chunks (0: not iterative), at the unfiltered search's
ef_search (60) whatever the filter. Paired against the over-fetch on pgvector 0.8.6 (100
queries, 100,000 chunks, load 5-6): the vector query 1.16-1.27x faster at p50 with `eq`
(1 chunk in 5), 1.37-1.42x with `and` (1 in 10); it found 404 and 437 of the exact top
10s' 1,000 distances against 449 and 488 (the over-fetch's ef_search is 300 / 500;
at ef_search 160 the same recall with `eq` but 0.83x its speed). Relaxed order is
approximate: sorted in Python as above; fewer than `candidates` and the scope is searched
exactly. The same shares go exactly as before (HNSW_MAX_CANDIDATES).

A filter's scope of more than VECTOR_SEARCH_EXACT_MAX_CHUNKS and at most
VECTOR_SEARCH_SIGNS_MAX_CHUNKS chunks is ranked by sign_bits.py instead (every chunk of it
pre-ranked on its embedding's sign bits, the best re-ranked exactly): faster than the HNSW
walk and nearer the exact ranking on the bench, on every pgvector version.

The scope and the index's path are statements (statements.py), sent with the search's
other statements in one round trip, and functions reading their rows. The text ranking
is text_ranking.py's.
"""
import math
from dataclasses import dataclass
from functools import cached_property, lru_cache

from django.conf import settings
from django.db.models import Q, Sum, Value
from pgvector import Vector
from pgvector.django import CosineDistance

from .filters import NumberSlot, filter_q, filter_shape, slotted_filter
from .models import Chunk, VectorStoreFile
from .sign_bits import signs_statement, takes_signs
from .statements import Shape, Slot, Statement, any_of, int_array, run_together

RRF_K = 60
FILE_ATTRIBUTES = "attributes"  # filters apply to the store files (files_statement)
HNSW_MAX_CANDIDATES = 1000
MAX_DISTANCE = 1.0  # a chunk no closer than orthogonal shares nothing with the query


@dataclass(frozen=True)
class Scope:
    """The chunks a search may return: those of its stores' completed files, or of
    `file_ids` alone when a filter narrowed them, and how many they are. Their chunks are
    named by store when no filter narrowed them: an IN list of 1,000 file ids cost the
    text ranking 1.39x its time (paired runs on 100,000 chunks)."""

    store_ids: list[str]
    file_ids: list[int] | None
    chunk_count: int

    @property
    def narrowed(self) -> bool:
        """Whether a filter left out some of the stores' files."""
        return self.file_ids is not None

    @property
    def chunks(self) -> Q:
        """The Q naming the scope's chunks: their files' ids one array parameter (what
        Postgres makes of an IN list anyway), not an IN list of as many parameters, which
        Django prepared and psycopg's client-side binding split one by one (200 with `eq`
        on the bench's store): 1.1-2.1 ms less CPU per filtered search, p50 1.04-1.07x,
        the same results (bench/README.md, "The two rankings at once")."""
        if not self.narrowed:
            return self.stores
        return Q(any_of(Chunk, "store_file", self.file_ids))

    @cached_property
    def file_array(self) -> str:
        """The files' ids as one array literal (statements.int_array), for the Shapes'
        statements."""
        return int_array(self.file_ids)

    @property
    def stores(self) -> Q:
        """The Q naming every chunk of the scope's stores."""
        return Q(store_id__in=self.store_ids)


def files_statement(store_ids: list[str], filters: dict | None) -> Statement:
    """The statement reading the scope: the completed files of the stores passing the
    attribute filter (a valid one: filters.check_filter checked it; pk, chunk count), or without
    a filter their chunks' total (the 1,000 files' rows read one by one: the hybrid search
    1.33x slower at p50 with the steps of that commit, bench/README.md)."""
    values = {f"store{n}": store_id for n, store_id in enumerate(store_ids)}
    shape = None
    if filters is not None:
        shape, filter_values = filter_shape(filters)
        values.update(filter_values)
    files = _files_shape(len(store_ids), shape)
    return Statement(files.sql, files.bind(values))


@lru_cache(maxsize=256)
def _files_shape(stores: int, shape: tuple | None) -> Shape:
    """files_statement's for `stores` stores and a filter of `shape` (filters.filter_shape;
    None: none), its values Slots; built by the ORM once per shape (per search it cost
    ~1.0-1.4 ms of CPU with a filter; bench/README.md, "Statements built once per
    shape")."""
    files = VectorStoreFile.objects.filter(
        store_id__in=[Slot(f"store{n}") for n in range(stores)], status="completed")
    if shape is None:
        return Shape.of(files.order_by().values("status").annotate(total=Sum("chunk_count"))
                        .values_list("total"))
    where = filter_q(slotted_filter(shape, Slot), FILE_ATTRIBUTES)
    built = Shape.of(files.filter(where).values_list("pk", "chunk_count"))
    return Shape(built.sql, tuple(_slot_of(param) for param in built.params))


def _slot_of(param):
    """A filter's value as the shape's Slot: JSONField adapted its placeholder (Jsonb)."""
    value = getattr(param, "obj", None)
    if isinstance(value, NumberSlot):
        return Slot(value.name)
    return Slot(value) if isinstance(value, Slot) else param


def searched_files(store_ids: list[str], filters: dict | None, rows: list[tuple]) -> Scope:
    """The scope from files_statement's rows."""
    if filters is None:
        return Scope(store_ids, None, sum(total for total, in rows))
    return Scope(store_ids, [pk for pk, _ in rows], sum(count for _, count in rows))


TABLE_ROWS = Statement(  # the planner's estimate of the rows (no count), pgvector's version
    "SELECT (SELECT reltuples FROM pg_class WHERE relname = %s), "
    "(SELECT extversion FROM pg_extension WHERE extname = 'vector')", [Chunk._meta.db_table])
ITERATIVE_SINCE = (0, 8)  # pgvector's first version with iterative index scans
ITERATIVE_EF = 1.5  # an iterative scan's ef_search: the unfiltered search's, 1.5 x candidates


def iterative_scans(version: str | None) -> bool:
    """Whether pgvector `version` (pg_extension's extversion, e.g. "0.8.1") scans its HNSW
    index iteratively."""
    try:
        return tuple(int(part) for part in (version or "").split(".")[:2]) >= ITERATIVE_SINCE
    except ValueError:
        return False


def nearest_statement(scope: Scope, vector: list[float], candidates: int,
                      table_rows: list[tuple]) -> Statement | None:
    """The statement of the HNSW index's path (TABLE_ROWS's rows given), or of the
    pre-ranking on sign bits for a filter's scope of its size (sign_bits.py), or None where
    the scope is searched exactly."""
    if scope.chunk_count <= settings.VECTOR_SEARCH_EXACT_MAX_CHUNKS:
        return None
    if takes_signs(scope.narrowed, scope.chunk_count):
        return signs_statement(scope.file_array, vector, candidates)
    rows, version = table_rows[0] if table_rows else (1.0, None)
    wanted = math.ceil(1.5 * candidates * max(1.0, rows or 1.0) / scope.chunk_count)
    if wanted > HNSW_MAX_CANDIDATES:
        return None
    if iterative_scans(version) and settings.VECTOR_SEARCH_MAX_SCAN_TUPLES > 0:
        return iterative_statement(scope, vector, candidates)
    shape = _index_scan_shape(wanted, None, 0)
    member, ids = ("store_file_id", scope.file_array) if scope.narrowed \
        else ("store_id", scope.store_ids)  # kept in the query, not all `wanted` to Python
    return Statement(f"SELECT nearest.id, nearest.distance FROM ({shape.sql}) AS nearest "
                     f"WHERE nearest.{member} = ANY(%s) AND nearest.distance < %s",
                     [*shape.bind(_values(scope, vector)), ids, MAX_DISTANCE],
                     setting=f"SET LOCAL hnsw.ef_search = {max(40, wanted)}")


def iterative_statement(scope: Scope, vector: list[float], candidates: int) -> Statement:
    """The iterative HNSW scan (pgvector >= 0.8) of the scope's `candidates` nearest
    chunks: the scope's condition in the scan, ef_search the unfiltered search's whatever
    the filter (the scan goes on by itself), at most VECTOR_SEARCH_MAX_SCAN_TUPLES chunks
    visited."""
    shape = _index_scan_shape(candidates, scope.narrowed, len(scope.store_ids))
    ef_search = math.ceil(ITERATIVE_EF * candidates)
    return Statement(f"WITH nearest AS MATERIALIZED ({shape.sql}) "  # the distance test after
                     f"SELECT nearest.id, nearest.distance FROM nearest "
                     f"WHERE nearest.distance < %s", [*shape.bind(_values(scope, vector)),
                                                      MAX_DISTANCE],
                     setting=f"SET LOCAL hnsw.ef_search = {ef_search}; "
                             f"SET LOCAL hnsw.iterative_scan = relaxed_order; "
                             f"SET LOCAL hnsw.max_scan_tuples = "
                             f"{settings.VECTOR_SEARCH_MAX_SCAN_TUPLES}")


def vector_ranking(scope: Scope, vector: list[float], candidates: int,
                   nearest: list[tuple] | None) -> list[tuple[int, float]]:
    """The `candidates` chunks of the scope nearest the query's vector: (id, distance);
    `nearest` the rows of nearest_statement (None where it was None): fewer than
    `candidates` and the scope is searched exactly after all (not after the sign bits'
    pre-ranking: its re-ranked rows are the ranking, those nearer than orthogonal)."""
    if not scope.chunk_count:
        return []
    if nearest is not None and takes_signs(scope.narrowed, scope.chunk_count):
        return nearest
    if nearest is not None and len(nearest) >= candidates:
        # sorted here: an ORDER BY around the index scan was taken as sorted already
        # (incremental sort on the distance) where HNSW's order is only approximate
        return sorted(nearest, key=lambda pair: (pair[1], pair[0]))[:candidates]
    rows = (Chunk.objects.filter(scope.chunks)
            .annotate(distance=CosineDistance("embedding", vector))
            .order_by("distance", "id").values_list("id", "distance")[:candidates])
    [exact] = run_together(Statement.of(rows, "SET LOCAL enable_indexscan = off"))
    return [(chunk_id, distance) for chunk_id, distance in exact if distance < MAX_DISTANCE]


def index_scan(vector: list[float], wanted: int, where: Q = Q()):
    """The query of the HNSW index's `wanted` nearest chunks of the whole table (or of
    those `where` names, on an iterative scan)."""
    return (Chunk.objects.filter(where).annotate(distance=CosineDistance("embedding", vector))
            .order_by("distance").values_list("id", "distance", "store_id", "store_file_id")
            [:wanted])


@lru_cache(maxsize=256)
def _index_scan_shape(wanted: int, narrowed: bool | None, stores: int) -> Shape:
    """index_scan's query of `wanted` rows, its values Slots (the vector, and with a scope,
    narrowed or not, its files' ids or its `stores` stores' ids); built by the ORM once per
    shape (per search it cost ~0.9 ms of CPU; bench/README.md, "Statements built once per
    shape")."""
    where = Q()
    if narrowed is not None:
        where = Scope([Slot(f"store{n}") for n in range(stores)],
                      Slot("file_ids") if narrowed else None, 1).chunks
    return Shape.of(index_scan(Value(Slot("vector")), wanted, where))


def _values(scope: Scope, vector: list[float]) -> dict:
    """The values of a Shape's Slots for a scope and the query's vector (as pgvector's
    CosineDistance writes it)."""
    values = {"vector": Vector(vector).to_text(),
              "file_ids": scope.file_array if scope.narrowed else None}
    values.update((f"store{n}", store_id) for n, store_id in enumerate(scope.store_ids))
    return values


def fused(*rankings: list[int]) -> dict[int, float]:
    """Reciprocal rank fusion, divided by the best possible sum (1.0: first in all)."""
    best = len(rankings) / (RRF_K + 1)
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, chunk_id in enumerate(ranking, start=1):
            scores[chunk_id] = scores.get(chunk_id, 0.0) + 1.0 / (RRF_K + rank)
    return {chunk_id: score / best for chunk_id, score in scores.items()}
