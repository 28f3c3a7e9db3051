"""A search's side reads (vector_stores/side_reads.py) on the real database: their own
thread and connection outside a transaction, none inside one, and a read no thread has
taken run by its caller."""
import threading

import pytest
from django.db import connection, transaction

from responses_app.models import Tenant
from vector_stores import side_reads


def where() -> tuple[str, int]:
    """The thread a read runs on and its connection's server process."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return threading.current_thread().name, cursor.fetchone()[0]


def tenant_names() -> list[str]:
    return list(Tenant.objects.order_by("name").values_list("name", flat=True))


def taken(function):
    """A side read of `function` once a side thread has started it (a read the caller
    wants before any thread took it is run by the caller)."""
    started = threading.Event()

    def read():
        started.set()
        return function()
    side = side_reads.SideRead(read)
    assert started.wait(30) is True
    return side


@pytest.mark.django_db(transaction=True)
def test_a_side_read_runs_on_its_own_thread_and_connection():
    _, mine = where()
    Tenant.objects.create(name="committed")
    assert side_reads.available() is True
    name, theirs = taken(where).result()
    assert (name.startswith("search-side"), theirs != mine) == (True, True)
    assert taken(tenant_names).result() == ["committed"]


@pytest.mark.django_db(transaction=True)
def test_inside_a_transaction_no_side_read_is_available():
    with transaction.atomic():
        Tenant.objects.create(name="uncommitted")
        assert side_reads.available() is False
        # why: a second connection does not see the caller's uncommitted row
        assert taken(tenant_names).result() == []
    assert side_reads.available() is True


@pytest.mark.django_db(transaction=True)
def test_a_read_no_side_thread_has_started_is_run_by_its_caller(settings):
    settings.VECTOR_SEARCH_SIDE_THREADS = 2
    release = threading.Event()
    busy = [side_reads.SideRead(release.wait, 30) for _ in range(2)]  # every thread
    read = side_reads.SideRead(where)  # queued behind them
    try:
        assert read.result() == where()  # taken back: this thread, this connection
    finally:
        release.set()
    assert [blocked.result() for blocked in busy] == [True, True]
