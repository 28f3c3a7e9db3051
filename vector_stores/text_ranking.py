"""The full-text ranking a hybrid search fuses: the chunks of its scope best matching the
query's words, by Postgres's `ts_rank` (`english` configuration), in tiers.

The query's lexemes are Postgres's own (`to_tsvector('english', query)`: stemmed, stop words
dropped, as the chunks' `tsv` was made). The ranking reads the chunks holding two or more
of them (an OR of every pair; those holding all of them first, ranked as the all-words
query ranks them), then, if that is fewer than `candidates`, those holding any; each tier
in `ts_rank` order, ties by chunk id, a chunk ranked in its first tier only. Each tier
ranks at most TEXT_MATCHES_RANKED matches (the first the GIN index finds).

With a filter (the scope's files named), the tiers are one statement, in the search's
second round trip: the filter's matches of any word, each ranked in its tier (all the
words, two or more, one); the tiers' order as before, identical whenever the filter's
files hold at most TEXT_MATCHES_RANKED matches of any word (above that, its two-word tier
is what the first of those hold, not the store's first two-word matches). With a filter
the two-word tier held ~9 of a filter's chunks at the median and the any-word tier, a
third round trip, ran in 88 and 96 searches of 100 (`eq`, `and`; bench/README.md). (The
two-word query alone, naming the files, was slower than finding its matches in the store
and keeping the files' after: the planner intersected the GIN index's matches with the
file index's rows, 3.3 of its 4.6 ms; the any-word query needs that intersection anyway.)

The tiers follow `ts_rank`'s own order (no corpus statistics: a lexeme counts 0.061 once,
at most 0.1 however often, so two lexemes outrank any one) and let the ranking read few
rows: `ts_rank` reads each match's row, and any word of a query of common words matches a
good part of a large store. Before (all words, then any word, 2,000 matches ranked): the
text ranking 1.82x slower at p50 without a filter (1.10x with `eq`, 0.94x with `and`), and
further from the full `ts_rank` order of every match: its top 10 the same on 100 of 100
queries now, 8.5 of 10 on average before (100 queries on 100,000 chunks, paired;
bench/README.md).
"""
from functools import lru_cache
from itertools import combinations

from django.contrib.postgres.search import SearchQuery
from django.db.models import BooleanField, Case, F, IntegerField, Value, When
from django.db.models.expressions import CombinedExpression

from .models import Chunk
from .ranking import Scope
from .statements import Shape, Slot, Statement, run_together

TEXT_MATCHES_RANKED = 2000
TSQUERY = "to_tsquery('simple', %s)"  # a raw query's tsquery, as SearchQuery(raw) writes it


def lexemes_statement(query: str) -> Statement:
    """The statement of the query's lexemes as the chunks' full-text vectors hold them."""
    return Statement("SELECT lexeme FROM unnest(to_tsvector('english', %s))", [query])


def first_statement(scope, lexemes: list[tuple], candidates: int) -> Statement | None:
    """The statement of the ranking's first tier (lexemes_statement's rows given): the
    chunks holding all the query's lexemes, then two or more (with a filter, then any:
    every tier); None if nothing can match."""
    terms = _terms(lexemes)
    if not scope.chunk_count or not terms:
        return None
    every = " & ".join(terms)
    if len(terms) == 1:
        return _ranked_matches(scope, every, candidates)
    two = " | ".join(f"({a} & {b})" for a, b in combinations(terms, 2))
    if scope.narrowed:  # every tier at once, in the filter's matches of any word
        return _ranked_matches(scope, " | ".join(terms), candidates, (every, two))
    return _ranked_matches(scope, two, candidates, (every,))


def text_ranking(scope, lexemes: list[tuple], candidates: int,
                 first: list[tuple] | None) -> list[int]:
    """The `candidates` chunks of the scope (ranking.Scope) best matching the query's words:
    those holding all of them first, then those holding two or more, then any; `first` the
    rows of first_statement (None where it was None)."""
    if first is None:
        return []
    ranked = [chunk_id for chunk_id, in first]
    terms = _terms(lexemes)
    if len(ranked) < candidates and len(terms) > 1 and not scope.narrowed:
        seen = set(ranked)
        [rows] = run_together(_ranked_matches(scope, " | ".join(terms),
                                              candidates + len(ranked)))
        ranked += [chunk_id for chunk_id, in rows
                   if chunk_id not in seen][:candidates - len(ranked)]
    return ranked


def _terms(lexemes: list[tuple]) -> list[str]:
    return [_quoted(lexeme) for lexeme, in lexemes]


def _quoted(lexeme: str) -> str:
    """A lexeme as a tsquery operand, taken as it is (the `simple` configuration only
    lowercases, and a lexeme is lowercase already)."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def _ranked_matches(scope, raw_query: str, candidates: int,
                    tiers: tuple[str, ...] = ()) -> Statement:
    """The statement of the best `candidates` of the scope's first TEXT_MATCHES_RANKED
    matches of `raw_query`: those matching the first of `tiers` first, then the next, then
    the others, each ranked as its own query ranks it (_matches_shape's SQL, built once per
    shape, its values bound here)."""
    values = {"raw": raw_query, "candidates": candidates,
              "file_ids": scope.file_array if scope.narrowed else None}
    values.update((f"store{n}", store_id) for n, store_id in enumerate(scope.store_ids))
    values.update((f"tier{n}", tier) for n, tier in enumerate(tiers))
    shape = _matches_shape(scope.narrowed, len(scope.store_ids), len(tiers))
    return Statement(shape.sql, shape.bind(values))


@lru_cache(maxsize=64)
def _matches_shape(narrowed: bool, stores: int, tiers: int) -> Shape:
    """_ranked_matches's statement for a scope narrowed by a filter or not, of `stores`
    stores, with `tiers` tiers, its values Slots; built by the ORM once per shape (per
    search it cost ~1.4-1.7 ms of CPU; bench/README.md, "Statements built once per shape").

    The matches are ranked in the scan that finds them and sorted around it. Ranking them
    around a subquery of their ids read each match's row twice (the scan, then by primary
    key): the text ranking 1.24-1.39x slower at p50, the hybrid search 1.08-1.18x; sorting
    the pairs in Python instead of SQL: 1.03-1.32x slower (100 queries on 100,000 chunks,
    alternating the order, the same rankings).

    A match's tier is computed once in the scan and its rank around it by the tier: the
    tier's tests written in the rank's expression as well ran them twice per row, the
    filtered statement 1.15-1.24x slower (paired, 100 queries, `eq` and `and`, load ~2;
    bench/README.md)."""
    scope = Scope([Slot(f"store{n}") for n in range(stores)],
                  Slot("file_ids") if narrowed else None, 1)
    tier, ranks, rank_params = Value(0), [], []
    for level, n in enumerate(reversed(range(tiers)), start=1):  # the first tier highest
        tier = Case(When(_matching(_raw(Slot(f"tier{n}"))), then=Value(level)),
                    default=tier, output_field=IntegerField())
        ranks.append(f"WHEN {level} THEN ts_rank(matches.tsv, {TSQUERY})")
        rank_params.append(Slot(f"tier{n}"))
    matches = (Chunk.objects.filter(scope.chunks, tsv=_raw(Slot("raw"))).annotate(tier=tier)
               .values_list("id", "tier", "tsv")[:TEXT_MATCHES_RANKED])
    inner = Shape.of(matches)
    rank = f"ts_rank(matches.tsv, {TSQUERY})"
    if ranks:
        rank = f"CASE matches.tier {' '.join(ranks)} ELSE {rank} END"
    return Shape(f"SELECT matches.id FROM ({inner.sql}) AS matches "
                 f"ORDER BY matches.tier DESC, {rank} DESC, matches.id LIMIT %s",
                 (*inner.params, *rank_params, Slot("raw"), Slot("candidates")))


def _raw(raw_query: str) -> SearchQuery:
    """A raw tsquery (its operands quoted lexemes, _quoted), read by `simple`."""
    return SearchQuery(raw_query, search_type="raw", config="simple")


def _matching(tsquery: SearchQuery) -> CombinedExpression:
    """Whether a chunk's full-text vector matches `tsquery` (a boolean column)."""
    return CombinedExpression(F("tsv"), "@@", tsquery, output_field=BooleanField())
