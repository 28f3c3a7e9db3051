"""OpenAI's attribute filters (`filters` of a search, a file_search tool) as a Django Q on
the attributes of a chunk's file.

A comparison is `{"type": eq|ne|gt|gte|lt|lte|in|nin, "key", "value"}`; a compound is
`{"type": and|or, "filters": [...]}`, nested at most MAX_DEPTH deep. Values are compared as
JSON (jsonb in Postgres): `eq`/`ne` by type and value (`true` is not `1`), the orderings
only between values of one JSON type (numbers numerically, strings by code point), `in` /
`nin` against a non-empty list of strings and numbers. A file without the key matches no
comparison, `ne` and `nin` included. A filter of the wrong shape raises InvalidSearchRequest.

A search checks a filter (check_filter) and builds its statement once per shape
(filter_shape: what the SQL depends on, and the values to bind; slotted_filter: a filter
of that shape with placeholders, for filter_q and the ORM; ranking.files_statement).
"""
from django.db import connection
from django.db.models import CharField, Func, JSONField, Q, Value, lookups
from django.db.models.fields.json import KeyTransform

COMPARISONS = ("eq", "ne", "gt", "gte", "lt", "lte", "in", "nin")
ORDERINGS = {"gt": lookups.GreaterThan, "gte": lookups.GreaterThanOrEqual,
             "lt": lookups.LessThan, "lte": lookups.LessThanOrEqual}
COMPOUNDS = ("and", "or")
MAX_DEPTH = 8
MAX_COMPARISONS = 64
ATTRIBUTES = "store_file__attributes"


class InvalidSearchRequest(ValueError):
    """A search parameter of the wrong shape (filters, ranking_options, max_num_results);
    the message names the parameter and what is wrong."""


def filter_q(spec, field: str = ATTRIBUTES) -> Q:
    """The Q selecting the chunks whose file's attributes match `spec`."""
    counter = [0]
    return _q(spec, field, "filters", 0, counter, True)


def check_filter(spec) -> None:
    """What filter_q checks, without building the Q (its lookups cost ~0.2-0.3 ms of CPU
    per search; bench/README.md, "Statements built once per shape"): InvalidSearchRequest
    on a filter of the wrong shape."""
    _q(spec, ATTRIBUTES, "filters", 0, [0], False)


def _q(spec, field: str, where: str, depth: int, counter: list, build: bool) -> Q | None:
    if not isinstance(spec, dict):
        raise InvalidSearchRequest(f"'{where}' must be an object (a comparison or a compound "
                                   "filter).")
    kind = spec.get("type")
    if kind in COMPOUNDS:
        if set(spec) != {"type", "filters"}:
            raise InvalidSearchRequest(f"'{where}': a compound filter has exactly 'type' and "
                                       "'filters'.")
        parts = spec["filters"]
        if not isinstance(parts, list) or not parts:
            raise InvalidSearchRequest(f"'{where}.filters' must be a non-empty array.")
        if depth >= MAX_DEPTH:
            raise InvalidSearchRequest(f"'{where}': filters nest at most {MAX_DEPTH} deep.")
        combined = None
        for index, part in enumerate(parts):
            q = _q(part, field, f"{where}.filters[{index}]", depth + 1, counter, build)
            if build:
                combined = q if combined is None else (combined & q if kind == "and"
                                                       else combined | q)
        return combined
    if kind in COMPARISONS:
        counter[0] += 1
        if counter[0] > MAX_COMPARISONS:
            raise InvalidSearchRequest(f"'filters' holds more than {MAX_COMPARISONS} comparisons.")
        return _comparison(spec, field, where, build)
    raise InvalidSearchRequest(f"'{where}.type' must be one of "
                               f"{', '.join(COMPARISONS + COMPOUNDS)}; got {kind!r}.")


def _comparison(spec: dict, field: str, where: str, build: bool) -> Q | None:
    if set(spec) != {"type", "key", "value"}:
        raise InvalidSearchRequest(f"'{where}': a comparison filter has exactly 'type', 'key' "
                                   "and 'value'.")
    kind, key, value = spec["type"], spec["key"], spec["value"]
    if not isinstance(key, str) or not key:
        raise InvalidSearchRequest(f"'{where}.key' must be a non-empty string.")
    if kind in ("in", "nin"):
        if (not isinstance(value, list) or not value
                or not all(_scalar(item) and not isinstance(item, bool) for item in value)):
            raise InvalidSearchRequest(f"'{where}.value' must be a non-empty array of strings "
                                       f"and numbers for '{kind}'.")
    elif not _scalar(value):
        raise InvalidSearchRequest(f"'{where}.value' must be a string, a number or a boolean "
                                   f"for '{kind}'.")
    elif kind not in ("eq", "ne") and isinstance(value, bool):
        raise InvalidSearchRequest(f"'{where}.value': '{kind}' compares numbers or strings, "
                                   "not booleans.")
    if not build:
        return None
    lhs = KeyTransform(key, field)
    present = Q(lookups.IsNull(lhs, False))
    if kind in ("in", "nin"):
        matches = None
        for item in value:
            q = Q(lookups.Exact(lhs, _json(item)))
            matches = q if matches is None else matches | q
        return matches if kind == "in" else present & ~matches
    if kind == "eq":
        return Q(lookups.Exact(lhs, _json(value)))
    if kind == "ne":
        return present & ~Q(lookups.Exact(lhs, _json(value)))
    same_type = Q(lookups.Exact(Func(lhs, function="jsonb_typeof", output_field=CharField()),
                                Value("string" if isinstance(value, str) else "number")))
    return same_type & Q(ORDERINGS[kind](lhs, _json(value)))


def _scalar(value) -> bool:
    return isinstance(value, str | bool | int | float)


def _json(value) -> Value:
    return Value(value, output_field=JSONField())



class NumberSlot(float):
    """A number's placeholder in a filter of slotted_filter's (Slots are strings)."""

    def __new__(cls, name: str):
        slot = super().__new__(cls, 0.0)
        slot.name = name
        return slot


def filter_shape(spec) -> tuple[tuple, dict]:
    """A valid filter's shape and its values: what filter_q's SQL depends on (its
    comparisons' types and nesting, an ordering's value type, an `in` list's length) and,
    by the names slotted_filter gives their Slots, its keys (as Django's KeyTransform
    passes them: an integer-like key as an integer, an array index) and its values (as
    Django's JSONField adapts them)."""
    values: dict = {}
    count = [0]

    def walk(part) -> tuple:
        if part["type"] in COMPOUNDS:
            return (part["type"], tuple(walk(child) for child in part["filters"]))
        n, key, value = count[0], part["key"], part["value"]
        count[0] += 1
        try:
            values[f"key{n}"] = int(key)
        except ValueError:
            values[f"key{n}"] = key
        items = value if isinstance(value, list) else [value]
        for i, item in enumerate(items):
            values[f"value{n}_{i}"] = connection.ops.adapt_json_value(item, None)
        return (part["type"], len(items), isinstance(value, list), isinstance(value, str))

    return walk(spec), values


def slotted_filter(shape: tuple, slot) -> dict:
    """A filter of `shape` whose keys and values are placeholders named as filter_shape
    names them: `slot(name)` for a key or a string, NumberSlot(name) for an ordering's
    number."""
    count = [0]

    def build(part: tuple) -> dict:
        kind = part[0]
        if kind in COMPOUNDS:
            return {"type": kind, "filters": [build(child) for child in part[1]]}
        n, (_, items, listed, string) = count[0], part
        count[0] += 1
        values = [slot(f"value{n}_{i}") if string or kind not in ORDERINGS
                  else NumberSlot(f"value{n}_{i}") for i in range(items)]
        return {"type": kind, "key": slot(f"key{n}"), "value": values if listed else values[0]}

    return build(shape)
