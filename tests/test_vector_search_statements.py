"""A search's statements built once per shape (statements.Shape) are the ORM's own, values
bound: the files' statement against the queryset the ORM builds with the filter's values,
for filters of every comparison, integer-like keys, nesting; and the int arrays' literal."""
import pytest
from django.db import connection

from vector_stores.filters import filter_q
from vector_stores.models import VectorStoreFile
from vector_stores.ranking import files_statement
from vector_stores.statements import int_array

pytestmark = pytest.mark.django_db

FILTERS = [
    {"type": "eq", "key": "genre", "value": "fiction"},
    {"type": "eq", "key": "3", "value": True},  # an integer-like key: an array index
    {"type": "ne", "key": " 7", "value": 1.5},
    {"type": "gt", "key": "year", "value": 2001},
    {"type": "lte", "key": "title", "value": "M"},
    {"type": "in", "key": "tag", "value": ["a", 2, "c"]},
    {"type": "nin", "key": "x'y", "value": [1]},
    {"type": "and", "filters": [{"type": "eq", "key": "genre", "value": "fiction"},
                                {"type": "gte", "key": "year", "value": 1990}]},
    {"type": "or", "filters": [{"type": "lt", "key": "year", "value": "1990"},
                               {"type": "and", "filters": [
                                   {"type": "in", "key": "-2", "value": ["q", "r"]},
                                   {"type": "ne", "key": "genre", "value": False}]}]},
]


@pytest.mark.parametrize("stores", [["vs_1"], ["vs_1", "vs_2", "vs_3"]])
@pytest.mark.parametrize("spec", FILTERS)
def test_the_files_statement_is_the_orms_with_the_filters_values(stores, spec):
    files = VectorStoreFile.objects.filter(store_id__in=stores, status="completed")
    sql, params = files.filter(filter_q(spec, "attributes")).values_list(
        "pk", "chunk_count").query.sql_with_params()
    for _ in range(2):  # built, then from the shape's cache
        statement = files_statement(stores, spec)
        assert (statement.sql, repr(statement.params)) == (sql, repr(list(params)))


def test_the_same_shape_with_other_values_binds_them():
    first = files_statement(["vs_1"], {"type": "gt", "key": "year", "value": 2001})
    second = files_statement(["vs_9"], {"type": "gt", "key": "12", "value": 7.5})
    assert second.sql == first.sql
    assert repr(second.params) == repr(["completed", "vs_9", 12, "number", 12,
                                        VectorStoreFile._meta.get_field("attributes")
                                        .get_db_prep_value(7.5, connection)])


def test_int_array_is_one_postgres_array_literal():
    assert int_array([3, 8, 5_000_000_000]) == "{3,8,5000000000}"
    assert int_array(iter([])) == "{}"
