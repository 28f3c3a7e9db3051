"""The database's settings, from the environment (docs/configuration.md): Postgres at
DATABASE_URL, else the embedded PostgreSQL under var/ (gateway.embedded_postgres); a
connection pool, and the timeouts of gateway.database_options; `gateway.settings` takes them.
"""
from pathlib import Path

import environ

from gateway import database_options, embedded_postgres

env = environ.Env()
VAR_DIR = Path(__file__).resolve().parent.parent / "var"

DATABASE_URL = env.str("DATABASE_URL", default="")
EMBEDDED_PGDATA = Path(env.str("EMBEDDED_PGDATA", default=str(VAR_DIR / "pgdata")))
if DATABASE_URL:
    DATABASES = {"default": env.db_url_config(DATABASE_URL)}
else:
    DATABASES = {"default": embedded_postgres.database_settings(EMBEDDED_PGDATA)}
# Django's PostgreSQL backend, whose pool hands out live connections only (gateway/postgres:
# the first request after an outage is not failed by a connection the outage killed).
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    DATABASES["default"]["ENGINE"] = "gateway.postgres"
# A pool, not persistent connections: ASGI requests and worker threads come and go.
DATABASES["default"]["CONN_MAX_AGE"] = 0
# How long a request waits for the database before it is answered 503 (with Retry-After):
# for a database thread's result (db_threads.run_db) and for a pooled connection.
DATABASE_WAIT_SECONDS = env.float("DATABASE_WAIT_SECONDS", default=5.0)
# How long a pool retries a lost connection in the background (psycopg_pool's backoff: 1 s,
# doubling) before it gives up and leaves the next request to connect at once. psycopg_pool's
# own 300 s let the backoff grow to minutes: after a 10 s outage the service came back 11.9 s
# after Postgres did (tests/test_e2e_durable.py), after a 5 min one up to ~2 min later.
DATABASE_RECONNECT_SECONDS = env.float("DATABASE_RECONNECT_SECONDS", default=5.0)
DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
    "min_size": 2,
    "max_size": env.int("DATABASE_POOL_SIZE", default=20),
    "timeout": DATABASE_WAIT_SECONDS,
    "reconnect_timeout": DATABASE_RECONNECT_SECONDS,
}
# A database that stops answering (a partition drops packets: nothing is refused) fails a
# statement in seconds instead of TCP's ~15 minutes of retransmissions, and its dead pooled
# connections are dropped (docs/configuration.md). libpq parameters; a DATABASE_URL query
# parameter of the same name wins. None of them applies to a Unix socket (embedded mode).
DATABASE_CONNECT_TIMEOUT_SECONDS = env.int("DATABASE_CONNECT_TIMEOUT_SECONDS", default=5)
DATABASE_TCP_TIMEOUT_SECONDS = env.float("DATABASE_TCP_TIMEOUT_SECONDS", default=5.0)
DATABASE_STATEMENT_TIMEOUT_SECONDS = env.float("DATABASE_STATEMENT_TIMEOUT_SECONDS",
                                               default=60.0)
database_options.harden(DATABASES["default"]["OPTIONS"], DATABASE_CONNECT_TIMEOUT_SECONDS,
                         DATABASE_TCP_TIMEOUT_SECONDS, DATABASE_STATEMENT_TIMEOUT_SECONDS)

__all__ = [name for name in dict(globals()) if name.isupper() and name != "VAR_DIR"]
