"""SQL statements sent to Postgres together, in one round trip (one query string of
several statements: Django's psycopg cursors bind parameters on the client, and Postgres
runs the statements of one query string in one transaction, an implicit one in
autocommit). A search's independent reads go out together: under a load average of ~10 on
this 2-core machine each round trip cost ~3-5 ms of waiting for a core (3.4 ms the stores'
check, 4.4 ms the files' read, at p50), ~1 ms at a load of ~1.4 (bench/README.md).

It needs client-side binding (Django's default for psycopg 3; `server_side_binding` in the
database OPTIONS would refuse several statements with parameters in one string).

A statement may carry a `setting` (`SET LOCAL ...`) run just before it, in the same
transaction: it holds for the statements after it in the same string, and ends with it.

A search's statements whose SQL varies with their parameters' number only (how many stores,
which tiers) are Shapes: their SQL built by the ORM once per shape, named Slots in place of
the values, and the values bound per call (the ORM's building took ~3-4 ms of a search's
~8 ms of CPU; figures in bench/README.md, "Statements built once per shape").
"""
from dataclasses import dataclass, field

from django.db import connection
from django.db.models import BooleanField
from django.db.models.expressions import RawSQL


@dataclass(frozen=True)
class Statement:
    """One row-returning SQL statement, %s placeholders and their parameters."""

    sql: str
    params: list = field(default_factory=list)
    setting: str = ""

    @classmethod
    def of(cls, queryset, setting: str = "") -> "Statement":
        """The statement of a Django queryset (values_list and the like)."""
        sql, params = queryset.query.sql_with_params()
        return cls(sql, list(params), setting)


class Slot(str):
    """A named placeholder for a value in a Shape's ORM query: the ORM passes it through to
    the parameters as it passes through the string it is (a CharField's value, a raw
    tsquery, a RawSQL parameter, a Value; str() of it is itself, as a JSON key's is)."""

    def __str__(self) -> str:
        return self


@dataclass(frozen=True)
class Shape:
    """A statement's SQL and its parameters, each a constant or a Slot to bind per call."""

    sql: str
    params: tuple

    @classmethod
    def of(cls, queryset) -> "Shape":
        """The shape of a queryset built with Slots for its values."""
        sql, params = queryset.query.sql_with_params()
        return cls(sql, tuple(params))

    def bind(self, values: dict) -> list:
        """The parameters, each Slot replaced by values[its name]."""
        return [values[param] if type(param) is Slot else param for param in self.params]


def run_together(*statements: Statement) -> list[list[tuple]]:
    """Each statement's rows, in order, from one round trip."""
    if not statements:
        return []
    sql = "; ".join(f"{s.setting}; {s.sql}" if s.setting else s.sql for s in statements)
    params = [param for statement in statements for param in statement.params]
    results = []
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        while True:
            if cursor.description is not None:  # a SET has no rows
                results.append([tuple(row) for row in cursor.fetchall()])
            if not cursor.nextset():
                break
    return results


def int_array(values) -> str:
    """Integers as one Postgres array literal ('{1,2,3}'), a string parameter: psycopg's
    client-side binding dumps a list of ints element by element in Python (~0.3 ms for a
    filter's 200 file ids, twice a search; bench/README.md, "Statements built once per
    shape"). Where the SQL casts it (`= ANY(%s::bigint[])`) or compares a bigint column
    with it, Postgres reads it as the list it was."""
    return "{" + ",".join(map(str, values)) + "}"


def any_of(model, field_name: str, values) -> RawSQL:
    """A boolean expression for a filter: `model`'s field is one of `values`, one array
    parameter cast to the column's type (what Postgres makes of an IN list anyway). Its
    SQL is the same whatever the values, where an IN list has one parameter per value,
    each prepared by Django and split out by psycopg's client-side binding."""
    column = model._meta.get_field(field_name)
    db_type = (column.target_field if column.is_relation else column).cast_db_type(connection)
    quoted = connection.ops.quote_name
    return RawSQL(f"{quoted(model._meta.db_table)}.{quoted(column.column)} = "
                  f"ANY(%s::{db_type}[])", [values], output_field=BooleanField())
