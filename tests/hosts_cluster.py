"""The gateway deployed over test hosts (tests/netns.py), each a network namespace: Redis
and PostgreSQL on a data host, the fake upstream on a host of its own, two web hosts
(Daphne) and two worker hosts (Celery), all real processes.

Two segments: `front`, where clients (the test) reach the web hosts, and `back`, where web
and worker hosts reach the data host and workers the upstream. The test process is on both.
Watchdog timings are short (2 s heartbeats, a round every 0.5 s) so a failover takes a
few seconds.
"""
import contextlib
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import httpx
import psycopg
import redis

from tests.netns import Host, Network
from tests.servers import BIN, PYTHON, ROOT, manage
from tests.throwaway_services import _postgres_bin, _postgres_user, redis_server_binary

WEB_PORT, UPSTREAM_PORT, POSTGRES_PORT, REDIS_PORT = 8000, 8901, 5432, 6379
HEARTBEAT_TTL_SECONDS, WATCHDOG_INTERVAL_SECONDS = 2, 0.5


@contextlib.contextmanager
def cluster_workdir(name: str):
    """A work directory for a cluster, removed after: outside pytest's own temporary root,
    which another pytest session on the machine tightens to 0700 when it starts, so that
    the PostgreSQL server (run as pgserver's user under root) could no longer open its
    configuration on a reload."""
    workdir = Path(tempfile.mkdtemp(prefix=f"gateway-{name}-"))
    try:
        yield workdir
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def wait_for_port(address: str, port: int, process: subprocess.Popen, log: Path,
                  timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{log.name} exited ({process.returncode}):\n{log.read_text()}")
        try:
            with socket.create_connection((address, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{address}:{port} did not open in {timeout}s:\n{log.read_text()}")


class Cluster:
    def __init__(self, network: Network, workdir: Path):
        self.network, self.workdir = network, workdir
        self.data = network.host("data", ("back",))
        self.upstream = network.host("upstream", ("back",))
        self.webs = [network.host(f"web{n}", ("front", "back")) for n in (1, 2)]
        self.workers = [network.host(f"worker{n}", ("back",)) for n in (1, 2)]
        data = self.data.address("back")
        self.database_url = f"postgres://postgres@{data}:{POSTGRES_PORT}/gateway"
        self.redis_url = f"redis://{data}:{REDIS_PORT}/0"
        self.upstream_url = f"http://{self.upstream.address('back')}:{UPSTREAM_PORT}"
        self.env: dict = {}
        self.api_key = ""

    def start(self, base_env: dict) -> "Cluster":
        self._start_postgres()
        self._start_redis()
        self._start(self.upstream, "upstream", [
            PYTHON, "-m", "tests.fake_upstream", "--host", self.upstream.address("back"),
            "--port", str(UPSTREAM_PORT)], port=(self.upstream.address("back"), UPSTREAM_PORT))
        self.env = {**base_env, "DATABASE_URL": self.database_url, "REDIS_URL": self.redis_url,
                    "UPSTREAM_BASE_URL": f"{self.upstream_url}/v1",
                    "SECRET_KEY": "test-secret-key-" + "x" * 40, "LOG_LEVEL": "WARNING",
                    "SSE_KEEPALIVE_SECONDS": "1", "UPSTREAM_TIMEOUT": "10",
                    "WATCHDOG_ENABLED": "1", "PYTHONUNBUFFERED": "1",
                    "ALLOWED_HOSTS": ",".join(web.address("front") for web in self.webs),
                    "WORKER_HEARTBEAT_TTL_SECONDS": str(HEARTBEAT_TTL_SECONDS),
                    "WATCHDOG_INTERVAL_SECONDS": str(WATCHDOG_INTERVAL_SECONDS)}
        self.manage("migrate", "-v0")
        self.api_key = self.manage("create_tenant", "hosts").strip().splitlines()[-1]
        for worker in self.workers:
            self._start(worker, "worker", [
                str(BIN / "celery"), "-A", "gateway", "worker", "-l", "warning",
                "--concurrency", "20", "--without-heartbeat", "--without-gossip",
                "--without-mingle"], env=self.env)
        for web in self.webs:
            self._start(web, "web", [PYTHON, "-m", "gateway.serve", "-b", web.address("front"),
                                     "-p", str(WEB_PORT), "gateway.asgi:application"],
                        env=self.env, port=(web.address("front"), WEB_PORT))
        deadline = time.monotonic() + 60
        while len(self.live_workers()) < len(self.workers):
            assert time.monotonic() < deadline, "the workers did not start"
            time.sleep(0.1)
        return self

    def _start(self, host: Host, role: str, args: list[str], env: dict | None = None,
               port: tuple[str, int] | None = None, user: str | None = None,
               stop_signal: int = signal.SIGTERM):
        log = self.workdir / f"{host.name}-{role}.log"
        process = host.popen(args, log=log, env=env, user=user, cwd=ROOT,
                             stop_signal=stop_signal)
        if port is not None:
            wait_for_port(*port, process, log)
        return process

    def _start_postgres(self) -> None:
        binaries, datadir = _postgres_bin(), self.workdir / "pgdata"
        datadir.mkdir()
        user = _postgres_user(datadir, binaries)
        subprocess.run([str(binaries / "initdb"), "-D", str(datadir), "-U", "postgres",
                        "--auth=trust", "--encoding=utf8"], check=True, user=user,
                       capture_output=True, timeout=120)
        with open(datadir / "pg_hba.conf", "a") as hba:  # the back segment's hosts
            hba.write(f"host all all {self.network.address('back', 0)}/24 trust\n")
        address = self.data.address("back")
        self._start(self.data, "postgres", [
            str(binaries / "postgres"), "-D", str(datadir), "-h", address,
            "-p", str(POSTGRES_PORT), "-k", str(datadir), "-c", "max_connections=200",
            "-c", "fsync=off", "-c", "synchronous_commit=off"],
            port=(address, POSTGRES_PORT), user=user, stop_signal=signal.SIGINT)
        admin = self.database_url.rsplit("/", 1)[0] + "/postgres"
        deadline = time.monotonic() + 60
        while True:
            try:
                with psycopg.connect(admin, autocommit=True, connect_timeout=3) as conn:
                    conn.execute("CREATE DATABASE gateway")
                return
            except psycopg.OperationalError:  # still starting up
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def _start_redis(self) -> None:
        address = self.data.address("back")
        self._start(self.data, "redis", [
            redis_server_binary(), "--bind", address, "--port", str(REDIS_PORT),
            "--protected-mode", "no", "--save", "", "--appendonly", "no",
            "--dir", str(self.workdir)], port=(address, REDIS_PORT))

    def manage(self, *args: str) -> str:
        return manage(self.env, *args)

    # --- what the test talks to --------------------------------------------------------------
    def client(self, web: Host) -> httpx.Client:
        return httpx.Client(base_url=f"http://{web.address('front')}:{WEB_PORT}/v1",
                            timeout=30, headers={"Authorization": f"Bearer {self.api_key}"})

    def redis(self) -> redis.Redis:
        return redis.Redis.from_url(self.redis_url, socket_timeout=10)

    def database(self) -> psycopg.Connection:
        return psycopg.connect(self.database_url, autocommit=True)

    def upstream_requests(self) -> list[dict]:
        return httpx.get(f"{self.upstream_url}/_log", timeout=10).json()

    def release(self, model: str) -> None:
        """Let the upstream's held streams of `model` (bench-…-held…) go on."""
        httpx.post(f"{self.upstream_url}/_release", json={"model": model},
                   timeout=10).raise_for_status()

    def upstream_stats(self) -> dict:
        return httpx.get(f"{self.upstream_url}/_stats", timeout=10).json()

    def live_workers(self) -> set[str]:
        return {key.decode().removeprefix("gw:worker:")
                for key in self.redis().scan_iter(match="gw:worker:*")}

    def worker_host(self, worker_id: str) -> Host:
        """The host of the worker process `worker_id` (its ids are host:pid:random)."""
        pid = int(worker_id.split(":")[1])
        return next(host for host in self.workers if host.processes[0].pid == pid)

    def log(self, host: Host) -> str:
        return "\n".join(path.read_text() for path in sorted(self.workdir.glob(
            f"{host.name}-*.log")))
