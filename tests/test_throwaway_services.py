"""The test session's service detection: a closed port, or a PostgreSQL without pgvector,
means the session starts its own PostgreSQL and Redis (tests/throwaway_services.py);
answering services are used as they are."""
import os
import shutil
import signal
import tempfile
from pathlib import Path

import pytest

from tests.servers import free_port
from tests.throwaway_services import (
    _postgres_bin, _stop, postgres_answers, postgres_unusable,
    provide_services, redis_answers, start_postgres)


def test_the_session_services_answer():
    assert postgres_answers(os.environ["TEST_POSTGRES_URL"])
    assert postgres_unusable(os.environ["TEST_POSTGRES_URL"]) is None  # it has pgvector
    assert redis_answers(os.environ["TEST_REDIS_URL"])


def test_a_closed_port_starts_throwaway_servers_which_stop_at_the_end(capsys):
    closed = free_port()
    environ = {"TEST_POSTGRES_URL": f"postgres://postgres@127.0.0.1:{closed}/postgres",
               "DATABASE_URL": f"postgres://postgres@127.0.0.1:{closed}/gateway",
               "TEST_REDIS_URL": f"redis://127.0.0.1:{closed}"}
    assert not postgres_answers(environ["TEST_POSTGRES_URL"])
    assert not redis_answers(environ["TEST_REDIS_URL"])
    cleanups = provide_services(environ)
    try:
        assert capsys.readouterr().err.splitlines()[0] == (
            f"test services: the PostgreSQL at 127.0.0.1:{closed} does not answer: "
            "starting a throwaway one")
        postgres_port = environ["TEST_POSTGRES_URL"].rsplit(":", 1)[1].split("/")[0]
        assert environ["TEST_POSTGRES_URL"] == (
            f"postgres://postgres@127.0.0.1:{postgres_port}/postgres")
        assert environ["DATABASE_URL"] == f"postgres://postgres@127.0.0.1:{postgres_port}/gateway"
        assert postgres_answers(environ["TEST_POSTGRES_URL"])
        assert redis_answers(environ["TEST_REDIS_URL"])
    finally:
        for cleanup in cleanups:
            cleanup()
    assert not postgres_answers(environ["TEST_POSTGRES_URL"])
    assert not redis_answers(environ["TEST_REDIS_URL"])


def test_answering_services_are_used_as_they_are():
    environ = {name: os.environ[name]
               for name in ("TEST_POSTGRES_URL", "DATABASE_URL", "TEST_REDIS_URL")}
    before = dict(environ)
    assert provide_services(environ) == []
    assert environ == before


def _link_or_copy(source, destination):
    try:
        os.link(source, destination)
    except OSError:  # another file system
        shutil.copy2(source, destination)


@pytest.fixture
def outside_basetemp():
    """A directory removed after, outside pytest's temporary root: as root the server runs
    as pgserver's user, who must traverse to it, and every pytest process (each of `make
    test`'s workers) tightens that root to 0700 when it first makes a temporary directory;
    in it, this test's initdb failed once under two workers (hosts_cluster.cluster_workdir
    does the same)."""
    directory = Path(tempfile.mkdtemp(prefix="gateway-plain-postgres-"))
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def test_a_postgres_without_pgvector_is_replaced_by_a_throwaway_one(outside_basetemp, capsys):
    """A real PostgreSQL 16 that answers but has no pgvector (the pgserver wheel's, without
    pgvector's files), as Debian 12's PostgreSQL on a developer's machine."""
    tmp_path = outside_basetemp
    wheel = _postgres_bin().parent.parent.parent  # site-packages: the binaries find their
    install = tmp_path / "pgserver" / "pginstall"  # libpq at $ORIGIN/../../../pgserver.libs
    shutil.copytree(wheel / "pgserver" / "pginstall", install, copy_function=_link_or_copy,
                    ignore=shutil.ignore_patterns("vector*", "include"))
    shutil.copytree(wheel / "pgserver.libs", tmp_path / "pgserver.libs",
                    copy_function=_link_or_copy)
    (tmp_path / "plain").mkdir()
    plain, plain_url = start_postgres(tmp_path / "plain", install / "bin")
    try:
        port = plain_url.rsplit(":", 1)[1]
        environ = {"TEST_POSTGRES_URL": f"{plain_url}/postgres",
                   "DATABASE_URL": f"{plain_url}/gateway",
                   "TEST_REDIS_URL": os.environ["TEST_REDIS_URL"]}
        assert postgres_answers(environ["TEST_POSTGRES_URL"])
        assert postgres_unusable(environ["TEST_POSTGRES_URL"]) == (
            "has no pgvector (no 'vector' in pg_available_extensions)")
        cleanups = provide_services(environ)
        try:
            started = environ["TEST_POSTGRES_URL"].rsplit(":", 1)[1].split("/")[0]
            assert started != port
            assert environ["DATABASE_URL"] == f"postgres://postgres@127.0.0.1:{started}/gateway"
            assert environ["TEST_REDIS_URL"] == os.environ["TEST_REDIS_URL"]  # it answers
            assert postgres_unusable(environ["TEST_POSTGRES_URL"]) is None
            err = capsys.readouterr().err.splitlines()
            assert err[0] == (
                f"test services: the PostgreSQL at 127.0.0.1:{port} has no pgvector (no 'vector' "
                "in pg_available_extensions): starting a throwaway one")
            assert err[1].endswith(f": PostgreSQL {environ['TEST_POSTGRES_URL']}, "
                                   f"Redis {os.environ['TEST_REDIS_URL']}")
            assert len(err) == 2
        finally:
            for cleanup in cleanups:
                cleanup()
    finally:
        _stop(plain, signal.SIGINT)
