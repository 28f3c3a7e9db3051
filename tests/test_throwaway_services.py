"""The test session's service detection: a closed port means the session starts its own
PostgreSQL and Redis (tests/throwaway_services.py); answering services are used as they are."""
import os

from tests.servers import free_port
from tests.throwaway_services import postgres_answers, provide_services, redis_answers


def test_the_session_services_answer():
    assert postgres_answers(os.environ["TEST_POSTGRES_URL"])
    assert redis_answers(os.environ["TEST_REDIS_URL"])


def test_a_closed_port_starts_throwaway_servers_which_stop_at_the_end():
    closed = free_port()
    environ = {"TEST_POSTGRES_URL": f"postgres://postgres@127.0.0.1:{closed}/postgres",
               "DATABASE_URL": f"postgres://postgres@127.0.0.1:{closed}/gateway",
               "TEST_REDIS_URL": f"redis://127.0.0.1:{closed}"}
    assert not postgres_answers(environ["TEST_POSTGRES_URL"])
    assert not redis_answers(environ["TEST_REDIS_URL"])
    cleanups = provide_services(environ)
    try:
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
