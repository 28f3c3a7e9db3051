"""Shared fixtures: the fake upstream, and real gateway deployments (production path on
Postgres + Redis + Celery + Daphne, and the embedded path: no Redis, in-process).

Nothing here skips: when Postgres, Redis or a worker is missing, the tests fail."""
import os
from contextlib import contextmanager

import httpx
import pytest
import redis

# The test process itself imports the ASGI app (in-process API tests): no watchdog thread
# there; the deployments the tests start run theirs.
os.environ["WATCHDOG_ENABLED"] = "0"
# nor the embedded sign backfill's (pytest-django read the settings before this file)
os.environ["EMBEDDED_SIGN_INTERVAL_SECONDS"] = "0"
from django.conf import settings  # noqa: E402

settings.EMBEDDED_SIGN_INTERVAL_SECONDS = 0.0

from tests.fake_upstream import FakeUpstream  # noqa: E402
from tests.servers import (  # noqa: E402
    E2E_REDIS_DB, REDIS_BASE_URL, Deployment, drop_postgres_database, fresh_postgres_database)

KEEPALIVE_SECONDS = "1"
pytest_plugins = ("tests.node_clients",)  # the Node.js clients' install (node_clients fixture)


@pytest.fixture(scope="session")
def upstream():
    server = FakeUpstream().start()
    yield server
    server.stop()


@pytest.fixture(autouse=False)
def clean_upstream(upstream):
    upstream.clear()
    return upstream


@contextmanager
def production_deployment(upstream, tmp_path_factory, name: str, redis_db: int,
                          redis_base_url: str = REDIS_BASE_URL, **env):
    """Daphne + a Celery worker on their own Postgres database and Redis database."""
    redis_url = f"{redis_base_url}/{redis_db}"
    redis.Redis.from_url(redis_url).flushdb()
    database_name = f"gateway_{name}_{os.getpid()}"
    database_url = fresh_postgres_database(database_name)
    deployment = Deployment(tmp_path_factory.mktemp(name), {
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "UPSTREAM_BASE_URL": upstream.base_url,
        "SSE_KEEPALIVE_SECONDS": KEEPALIVE_SECONDS,
        "UPSTREAM_TIMEOUT": "5",
        "SECRET_KEY": "test-secret-key-" + "x" * 40,
        "LOG_LEVEL": "WARNING",
        # MCP: the test MCP servers listen on loopback; a short call timeout for the slow tool
        "MCP_EGRESS_ALLOWLIST": "127.0.0.1/32",
        "MCP_CALL_TIMEOUT_SECONDS": "2",
        "MCP_MAX_RESULT_BYTES": "100000",
        "CHAT_MAX_TOOL_ITERATIONS": "3",  # chat completions: the limit reached in 3 turns
        **env,
    })
    deployment.manage("migrate", "-v0")
    deployment.start()
    try:
        yield deployment
    finally:
        deployment.stop()
        drop_postgres_database(database_name)


@pytest.fixture
def embedded_database_url():
    """A fresh database on the test Postgres for a deployment without Redis (the in-process
    worker and bus); tests/test_e2e_embedded.py runs one on the embedded PostgreSQL itself."""
    database_name = f"gateway_embedded_{os.getpid()}"
    yield fresh_postgres_database(database_name)
    drop_postgres_database(database_name)


@pytest.fixture(scope="session")
def fake_search():
    """A fake SearXNG and Brave Search API on loopback (tests/fake_search.py)."""
    from tests.fake_search import FakeSearch

    server = FakeSearch().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def production(upstream, fake_search, tmp_path_factory):
    """The shared production-path deployment, talking to the fake upstream; its web_search
    runs on the fake SearXNG (the settings' backend), unless the tenant has one of its own
    in the admin (read at every use: a test adds one while the deployment runs)."""
    with production_deployment(upstream, tmp_path_factory, "e2e", E2E_REDIS_DB,
                               WEB_SEARCH_BACKEND="searxng",
                               WEB_SEARCH_URL=fake_search.searxng_url,
                               WEB_SEARCH_EGRESS_ALLOWLIST="127.0.0.1/32",
                               WEB_SEARCH_BACKENDS_CACHE_SECONDS="0") as deployment:
        yield deployment


@pytest.fixture(scope="session")
def tenant_key(production):
    return production.new_api_key("alice")


@pytest.fixture(scope="session")
def other_tenant_key(production):
    return production.new_api_key("bob")


@pytest.fixture
def api(production, tenant_key):
    with httpx.Client(base_url=production.base_url, timeout=30,
                      headers={"Authorization": f"Bearer {tenant_key}"}) as client:
        yield client


@pytest.fixture
def openai_client(production, tenant_key):
    from openai import OpenAI

    return OpenAI(base_url=production.base_url, api_key=tenant_key, max_retries=0, timeout=30)
