"""Benchmark the gateway's production path against its upstream called directly.

    .venv/bin/python -m bench.run [--quick] [--out bench/results/latest.md]

Starts a lean fake upstream (``bench.upstream``), a fresh Postgres database
(``gateway_bench``), Redis DB 12 (flushed), Daphne and a Celery worker, then runs the matrix
pacing x concurrency, each cell once against the upstream directly and once through the
gateway, then the many-concurrent-streams check. Prints a markdown table to stdout, writes
it and the raw JSON next to each other, and stops every process it started.
"""
from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import platform
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import redis

from bench import agent_loop, socket_storm
from bench.loadgen import Run, Target, fetch, run_load
from tests.servers import (BIN, POSTGRES_ADMIN_URL, PYTHON, REDIS_BASE_URL, ROOT, Deployment,
                           free_port, fresh_postgres_database)

DB_NAME = os.environ.get("BENCH_DB_NAME", "gateway_bench")
REDIS_DB = int(os.environ.get("BENCH_REDIS_DB", "12"))
N_CHUNKS = 200
WORKER_CONCURRENCY = 300  # per worker process
WORKERS = 2  # Celery worker processes: one per core (a process's threads share one GIL)
CELL_MAX_SECONDS = 120.0
REQUEST_TIMEOUT = 60.0

# (pacing ms, concurrency, total requests). At concurrency 100 every client's first request
# starts at the same instant; 1000 requests (ten rounds) keep that burst to a tenth of the
# samples, so the p50 is the steady state and the p99 shows the burst.
FULL_MATRIX = [(0, 1, 20), (0, 10, 100), (0, 100, 1000), (5, 1, 20), (5, 10, 100), (5, 100, 1000)]
QUICK_MATRIX = [(5, 1, 5), (5, 10, 30)]
FULL_STREAMS, QUICK_STREAMS = 500, 50
STREAMS_PACING = 5

CLK_TCK = os.sysconf("SC_CLK_TCK")


class Aborted(Exception):
    """A process the benchmark depends on exited."""


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- processes


class BenchDeployment(Deployment):
    """`tests.servers.Deployment` with `workers` Celery worker processes sized for hundreds
    of concurrent streams."""

    def __init__(self, workdir: Path, env: dict, worker_concurrency: int, workers: int):
        super().__init__(workdir, env, worker=False)
        self.worker_concurrency = worker_concurrency
        self.worker_count = workers
        self.workers: list[subprocess.Popen] = []

    def start(self) -> None:
        super().start()  # web only
        for n in range(self.worker_count):
            worker_log = self.workdir / f"worker{n + 1}-{self._starts}.log"
            self.workers.append(subprocess.Popen(
                [str(BIN / "celery"), "-A", "gateway", "worker", "-l", "warning",
                 "-n", f"bench{n + 1}@%h", "--concurrency", str(self.worker_concurrency),
                 "--without-heartbeat", "--without-gossip", "--without-mingle"],
                cwd=ROOT, env=self.env, stdout=worker_log.open("w"), stderr=subprocess.STDOUT,
            ))

    def stop(self) -> None:
        super().stop()  # web
        for process in self.workers:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.workers:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.workers = []


class FakeUpstreamProcess:
    def __init__(self, logdir: Path):
        self.port = free_port()
        self.log_path = logdir / "upstream.log"
        self.process: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, timeout: float = 20.0) -> None:
        self.process = subprocess.Popen(
            [PYTHON, "-m", "bench.upstream", "--port", str(self.port)],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=self.log_path.open("w"), text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"})
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        line = self.process.stdout.readline() if ready else ""
        if not line.startswith("READY"):
            raise RuntimeError(f"fake upstream did not start: {line!r}\n{self.log_path.read_text()}")

    def stop(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process.stdout.close()
        self.process = None


# --------------------------------------------------------------------------- /proc accounting


def _all_stats() -> dict[int, tuple[int, float]]:
    """pid -> (ppid, CPU seconds of the process, all its threads and its reaped children)."""
    stats = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            text = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2:].split()
        # fields[0] is field 3 (state): ppid=4, utime=14, stime=15, cutime=16, cstime=17
        ticks = int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])
        stats[int(name)] = (int(fields[1]), ticks / CLK_TCK)
    return stats


def tree_cpu(stats: dict, root) -> float | None:
    """CPU seconds of `root` (a pid, or a list of pids summed) and every live descendant."""
    if isinstance(root, list):
        parts = [tree_cpu(stats, pid) for pid in root]
        return None if None in parts else sum(parts)
    if root is None or root not in stats:
        return None
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        total += stats[pid][1]
        todo.extend(children.get(pid, ()))
    return total


def machine_jiffies() -> tuple[int, int]:
    """(busy, total) jiffies over all CPUs."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    total = sum(values[:8])
    return total - idle, total


def memory_mb(pid) -> dict:
    """VmHWM/VmRSS in MB of a process, or summed over a list of processes."""
    if isinstance(pid, list):
        out: dict = {}
        for one in pid:
            for key, value in memory_mb(one).items():
                out[key] = out.get(key, 0) + value
        return out
    out = {}
    if pid is None:
        return out
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(("VmHWM:", "VmRSS:")):
                out[line.split(":")[0]] = int(line.split()[1]) / 1024
    except OSError:
        pass
    return out


class HeldMemory:
    """The web's and the workers' resident memory before a cell and at its peak (sampled
    every half second while it runs): what each held stream costs, in MB per 1,000."""

    def __init__(self, pids: dict):
        self.pids = {name: pids[name] for name in ("web", "worker") if name in pids}
        self.before = {name: self._rss(pid) for name, pid in self.pids.items()}
        self.peak = dict(self.before)

    @staticmethod
    def _rss(pid) -> float | None:
        return memory_mb(pid).get("VmRSS")

    def sample(self) -> None:
        for name, pid in self.pids.items():
            now = self._rss(pid)
            if now is not None and (self.peak[name] is None or now > self.peak[name]):
                self.peak[name] = now

    def per_1000(self, streams: int) -> dict:
        return {name: 1000 * (self.peak[name] - self.before[name]) / max(streams, 1)
                for name in self.pids
                if self.peak[name] is not None and self.before[name] is not None}


class Meter:
    """CPU of each process of interest, sampled before and after a cell."""

    def __init__(self, pids: dict[str, int | None], database: str | None = None,
                 redis_url: str | None = None):
        self.pids = pids
        self.database = database  # the gateway's database: its backends' CPU is "pg_db"
        self.redis_url = redis_url  # its server's XADD and XREAD counts (server-wide)

    def sample(self) -> dict:
        backends = database_backends(self.database) if self.database else None
        commands = redis_commands(self.redis_url) if self.redis_url else {}
        stats = _all_stats()
        sample = {name: tree_cpu(stats, pid) for name, pid in self.pids.items()}
        sample.update({f"_{name}": count for name, count in commands.items()})
        if backends is not None:
            sample["pg_db"] = sum(stats[pid][1] for pid in backends if pid in stats)
        sample["loadgen"] = time.process_time()
        sample["_machine"] = machine_jiffies()
        sample["_wall"] = time.monotonic()
        return sample

    @staticmethod
    def delta(before: dict, after: dict, responses: int) -> dict:
        out = {}
        for name, value in after.items():
            if name.startswith("_") or value is None or before.get(name) is None:
                continue
            out[f"{name}_ms_per_resp"] = 1000 * (value - before[name]) / max(responses, 1)
        for name in ("xadd", "xread"):  # bus entries written, reads (first and shared)
            if f"_{name}" in after and f"_{name}" in before:
                out[f"{name}_per_resp"] = (after[f"_{name}"] - before[f"_{name}"]) / max(responses, 1)
        busy = after["_machine"][0] - before["_machine"][0]
        total = after["_machine"][1] - before["_machine"][1]
        out["machine_busy_pct"] = 100 * busy / total if total else None
        out["wall_s"] = after["_wall"] - before["_wall"]
        return out


def redis_commands(url: str) -> dict[str, int]:
    """The Redis server's XADD and XREAD calls so far (scripts' XADDs included): entries
    written to the bus, and reads of it. Server-wide: a server shared with other work
    counts that work too."""
    try:
        stats = redis.Redis.from_url(url).info("commandstats")
    except Exception:
        return {}
    return {name: stats.get(f"cmdstat_{name}", {}).get("calls", 0) for name in ("xadd", "xread")}


def redis_pid(url: str) -> int | None:
    try:
        return int(redis.Redis.from_url(url).info("server")["process_id"])
    except Exception:
        return None


def database_backends(database: str) -> list[int] | None:
    """The pids of the Postgres backends connected to `database` now (None if unknown).
    Their CPU is the gateway's own share of the server, apart from other databases' work
    (a backend that exits between two samples is missed; the gateway's pools keep theirs)."""
    try:
        with psycopg.connect(POSTGRES_ADMIN_URL, connect_timeout=5, autocommit=True) as conn:
            rows = conn.execute("select pid from pg_stat_activity where datname = %s",
                                [database]).fetchall()
    except Exception:
        return None
    return [pid for pid, in rows]


def postgres_pid(url: str) -> int | None:
    """The postmaster's pid (parent of a backend), if it runs on this machine."""
    for attempt in range(3):
        try:
            with psycopg.connect(url, connect_timeout=5) as conn:
                backend = conn.execute("select pg_backend_pid()").fetchone()[0]
                stat = Path(f"/proc/{backend}/stat").read_text()
            return int(stat[stat.rindex(")") + 2:].split()[1])
        except Exception as exc:
            error = exc
            time.sleep(0.5)
    log(f"postgres CPU will not be reported: {error!r}")
    return None


# --------------------------------------------------------------------------- the matrix


def _round(value, digits=1):
    return None if value is None else round(value, digits)


def _records(run: Run) -> list[dict]:
    t0 = min((r.t_start for r in run.results), default=0.0)
    return [{**r.as_dict(), "t_start": r.t_start - t0} for r in run.results]


async def wait_ready(target: Target, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        result = await fetch(target, min(30.0, max(1.0, deadline - time.monotonic())))
        if result.ok:
            return
        last = result.error
        await asyncio.sleep(0.5)
    raise RuntimeError(f"the gateway did not serve a stream within {timeout}s: {last}")


def check_alive(processes: dict) -> None:
    for name, process in processes.items():
        if process is None or process.poll() is not None:
            code = None if process is None else process.returncode
            raise Aborted(f"{name} (pid {getattr(process, 'pid', '?')}) exited with code {code}"
                          + (" (killed by a signal from outside the benchmark?)" if code and code < 0 else ""))


async def measure(target: Target, concurrency: int, total: int, meter: Meter | None,
                  label: str, processes: dict, max_seconds: float = CELL_MAX_SECONDS,
                  request_timeout: float = REQUEST_TIMEOUT, warmup: bool = True,
                  ramp_seconds: float = 0.0) -> dict:
    check_alive(processes)
    if warmup:
        count = min(concurrency, 10)
        await run_load(target, count, count, max_seconds=60, request_timeout=60)
        await asyncio.sleep(0.3)
    log(f"{label}: {total} requests at concurrency {concurrency} ...")
    held = HeldMemory(meter.pids if meter else {})
    before = meter.sample() if meter else None
    load = asyncio.ensure_future(run_load(target, concurrency, total, max_seconds=max_seconds,
                                          request_timeout=request_timeout,
                                          ramp_seconds=ramp_seconds))
    while not load.done():  # a dead web or worker would leave every request hanging: stop early
        await asyncio.wait([load], timeout=0.5)
        held.sample()
        if not load.done():
            try:
                check_alive(processes)
            except Aborted as exc:
                load.cancel()
                await asyncio.gather(load, return_exceptions=True)
                raise Aborted(f"{label}: {exc}") from None
    run = load.result()
    await asyncio.sleep(0.3)  # let the tail of the cell's work (DB writes) land in the sample
    after = meter.sample() if meter else None
    summary = run.summary()
    try:
        check_alive(processes)
    except Aborted as exc:
        summary["died"] = str(exc)
    if meter:
        summary["cpu"] = Meter.delta(before, after, len(run.results))
        summary["cpu"]["loadgen_ms_per_resp"] = summary["client_cpu_ms_per_resp"]
        summary["memory"] = {name: memory_mb(pid) for name, pid in meter.pids.items()
                             if name in ("web", "worker")}
        summary["mb_per_1000_streams"] = held.per_1000(concurrency)
    summary["lost_samples"] = [{"reason": r.lost, "body_tail": r.body[-1500:].decode("utf-8", "replace")}
                               for r in run.results if r.lost is not None][:3]
    for r in run.results:
        r.body = b""
    summary["requests"] = _records(run)
    log(f"{label}: ok={summary['ok']} errors={summary['errors']} {summary['error_kinds'] or ''} "
        f"lost={summary['lost']} {summary['lost_kinds'] or ''} in {summary['wall_s']:.1f}s, "
        f"TTFD p50={_round(summary['ttfd_p50_ms'])} ms, total p50={_round(summary['total_p50_ms'])} ms"
        + (f", gateway CPU {summary['cpu'].get('web_ms_per_resp', 0) + summary['cpu'].get('worker_ms_per_resp', 0):.1f} ms/resp"
           if meter and target.mode != "direct" else ""))
    if "died" in summary:
        raise Aborted(f"{label}: {summary['died']}", summary)
    return summary


async def run_matrix(upstream_url: str, gateway_url: str, api_key: str, meter: Meter,
                     matrix: list, streams: int, processes: dict, report: dict,
                     lockstep: bool = False, chat_first: bool = False,
                     skip_chat: bool = False, socket_target: bool = False) -> None:
    """Fill `report["cells"]` and `report["streams_check"]` as the cells complete, so a
    run that stops half-way still has the cells it finished."""
    log("waiting for the gateway and its worker to serve a stream ...")
    check_alive(processes)
    await wait_ready(Target.make("gateway", gateway_url, "bench-3-0", 3, api_key))
    cells = report.setdefault("cells", [])
    for pacing, concurrency, total in matrix:
        model = f"bench-{N_CHUNKS}-{pacing}"
        cell = {"pacing_ms": pacing, "concurrency": concurrency, "total": total, "model": model}
        # clients start spread over one response's time, as independent clients are (not
        # all at one instant, then in lockstep), unless --lockstep
        ramp = 0.0 if lockstep else N_CHUNKS * pacing / 1000
        modes = [("direct", upstream_url, None), ("gateway", gateway_url, api_key),
                 ("chat", gateway_url, api_key)]
        if chat_first:  # paired rounds: the two gateway paths in both orders
            modes[1:] = modes[:0:-1]
        if skip_chat:
            modes = [mode for mode in modes if mode[0] != "chat"]
        if socket_target:
            modes.append(("socket", gateway_url, api_key))
        for mode, base, key in modes:
            target = Target.make(mode, base, model, N_CHUNKS, key)
            try:
                cell[mode] = await measure(target, concurrency, total, meter,
                                           f"pacing={pacing}ms c={concurrency} {mode}", processes,
                                           ramp_seconds=ramp)
            except BaseException as exc:
                if isinstance(exc, Aborted) and len(exc.args) > 1:
                    cell[mode] = exc.args[1]
                if "direct" in cell:
                    cells.append(cell)
                raise
        cells.append(cell)
    if not streams:
        return
    model = f"bench-{N_CHUNKS}-{STREAMS_PACING}"
    target = Target.make("gateway", gateway_url, model, N_CHUNKS, api_key)
    try:
        check = await measure(target, streams, streams, meter, f"{streams}-stream check", processes,
                              max_seconds=CELL_MAX_SECONDS, request_timeout=CELL_MAX_SECONDS,
                              warmup=False)
    except Aborted as exc:
        if len(exc.args) < 2:
            raise
        check = exc.args[1]
    check.update({"pacing_ms": STREAMS_PACING, "model": model,
                  "passed": check["errors"] == 0 and check["lost"] == 0 and check["ok"] == streams
                  and "died" not in check})
    report["streams_check"] = check
    if "died" in check:
        raise Aborted(check["died"])


# --------------------------------------------------------------------------- report


def all_in_cpu(cpu: dict) -> float | None:
    """The gateway's all-in CPU per response: web + worker + Redis + its Postgres backends."""
    parts = [cpu.get(f"{n}_ms_per_resp") for n in ("web", "worker", "redis", "pg_db")]
    return None if None in parts else sum(parts)


def _f(value, digits=1) -> str:
    if value is None:
        return "–"
    return f"{value:.{digits}f}"


def render(report: dict) -> str:
    meta = report["meta"]
    lines = [
        f"# Gateway benchmark ({'quick' if meta['quick'] else 'full'})", "",
        f"{meta['date']} · commit {meta['commit']} · {meta['cpus']} CPUs · {meta['python']} · "
        f"{N_CHUNKS} text chunks per response · {report['meta'].get('workers', 1)} worker process(es) × --concurrency {WORKER_CONCURRENCY} · "
        f"gateway body framing: {', '.join(meta.get('gateway_framing') or ['?'])} · "
        + ("clients start in lockstep" if meta.get("lockstep")
           else "clients' starts spread over one response (N × pacing)"), "",
    ]
    if meta.get("aborted"):
        lines += [f"**ABORTED**: {meta['aborted']} — the cells below are the ones that ran.", ""]
    lines += [
        "| pacing ms | conc | target | reqs | ok | errors | lost | resp/s | TTFD p50 | TTFD p99 "
        "| total p50 | total p99 | gw CPU ms/resp | web HWM MB | worker HWM MB | ΔTTFD p50 "
        "| ΔTTFD p99 | total p50 × | web / worker MB per 1k held |",
        "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for cell in report.get("cells", []):
        direct = cell["direct"]
        for mode in ("direct", "gateway", "chat", "socket"):
            s = cell.get(mode)
            if s is None:
                continue
            cpu = s.get("cpu", {})
            row = [str(cell["pacing_ms"]), str(cell["concurrency"]), mode, str(s["issued"] + s["skipped"]),
                   str(s["ok"]), str(s["errors"]), str(s["lost"]), _f(s["rps"]), _f(s["ttfd_p50_ms"]),
                   _f(s["ttfd_p99_ms"]), _f(s["total_p50_ms"]), _f(s["total_p99_ms"])]
            if mode != "direct":  # the gateway's Responses and Chat Completions paths
                gw = (cpu.get("web_ms_per_resp") or 0) + (cpu.get("worker_ms_per_resp") or 0)
                mem = s.get("memory", {})
                ratio = (s["total_p50_ms"] / direct["total_p50_ms"]
                         if s["total_p50_ms"] and direct["total_p50_ms"] else None)
                diffs = [s[key] - direct[key]
                         if s[key] is not None and direct[key] is not None else None
                         for key in ("ttfd_p50_ms", "ttfd_p99_ms")]
                held = s.get("mb_per_1000_streams", {})
                row += [_f(gw), _f(mem.get("web", {}).get("VmHWM"), 0),
                        _f(mem.get("worker", {}).get("VmHWM"), 0),
                        *[("+" if diff and diff > 0 else "") + _f(diff) for diff in diffs],
                        _f(ratio, 2),
                        f"{_f(held.get('web'), 0)} / {_f(held.get('worker'), 0)}"]
            else:
                row += ["", "", "", "", "", "", ""]
            lines.append("| " + " | ".join(row) + " |")
    check = report.get("streams_check")
    if check is None:
        lines += ["", "## Concurrent-streams check: not run", ""]
    else:
        cpu, mem = check.get("cpu", {}), check.get("memory", {})
        gw = (cpu.get("web_ms_per_resp") or 0) + (cpu.get("worker_ms_per_resp") or 0)
        lines += [
        "", f"## {check['requested']} concurrent streams ({check['pacing_ms']} ms pacing, gateway)", "",
        f"**{'PASS' if check['passed'] else 'FAIL'}**: {check['ok']}/{check['requested']} ok, "
        f"{check['errors']} errors {check['error_kinds'] or ''}, {check['lost']} with lost events "
        f"{check['lost_kinds'] or ''}; wall {check['wall_s']:.1f} s, {check['rps']:.1f} resp/s, "
        f"TTFD p50/p99 {_f(check['ttfd_p50_ms'])}/{_f(check['ttfd_p99_ms'])} ms, "
        f"total p50/p99 {_f(check['total_p50_ms'])}/{_f(check['total_p99_ms'])} ms, "
        f"gateway CPU {gw:.1f} ms/resp, peak memory web {_f(mem.get('web', {}).get('VmHWM'), 0)} MB, "
        f"worker {_f(mem.get('worker', {}).get('VmHWM'), 0)} MB."]
    lines += [
        "", "## CPU per response by process (ms)", "",
        "| pacing ms | conc | target | web | worker | upstream | loadgen | redis | postgres* | pg db | all-in "
        "| machine busy % | bus entries / resp | XREADs / resp |",
        "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    rows = [(c["pacing_ms"], c["concurrency"], m, c[m]) for c in report.get("cells", [])
            for m in ("direct", "gateway", "chat", "socket") if m in c]
    if check is not None:
        rows.append((check["pacing_ms"], check["requested"], "gateway", check))
    for pacing, concurrency, mode, s in rows:
        cpu = s.get("cpu", {})
        names = ["web", "worker", "upstream", "loadgen", "redis", "postgres", "pg_db"]
        lines.append(f"| {pacing} | {concurrency} | {mode} | "
                     + " | ".join(_f(cpu.get(f"{n}_ms_per_resp")) for n in names)
                     + f" | {_f(all_in_cpu(cpu) if mode != 'direct' else None)}"
                     + f" | {_f(cpu.get('machine_busy_pct'), 0)}"
                     + f" | {_f(cpu.get('xadd_per_resp') if mode != 'direct' else None)}"
                     + f" | {_f(cpu.get('xread_per_resp') if mode != 'direct' else None)} |")
    lines += ["", "\\* postgres counts the whole server (every database), so other work on the machine "
              "shows up there; pg db is the CPU of the backends connected to the gateway's "
              "database alone. all-in: web + worker + redis + pg db (redis counts the whole "
              "server too). Bus entries and XREADs per response: the Redis "
              "server's XADD and XREAD calls (scripts' included) during the cell, per "
              "response: how many entries a response's events travelled in (fewer: more "
              "batched), and the web's reads of the streams (catch-up reads: a new reader's, "
              "a gap's, silent streams'; the entries themselves come by pub/sub).", ""]
    if report.get("agent_loops"):
        lines += agent_loop.render(report["agent_loops"]) + [""]
    if report.get("sockets"):
        lines += socket_storm.render(report["sockets"]) + [""]
    return "\n".join(lines)


# --------------------------------------------------------------------------- main


def _git_commit() -> str:
    """Short HEAD, with `+N modified` when the work tree differs (what is measured is the tree)."""
    try:
        def git(*args):
            return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                                  timeout=10).stdout
        head = git("rev-parse", "--short", "HEAD").strip() or "?"
        changed = [line for line in git("status", "--porcelain", "--untracked-files=no").splitlines()
                   if line.strip()]
        return f"{head} +{len(changed)} modified" if changed else head
    except Exception:
        return "?"


def write_report(report: dict, started: float, out_md: Path, out_json: Path) -> None:
    report["meta"]["duration_s"] = round(time.monotonic() - started, 1)
    report["meta"]["gateway_framing"] = sorted(
        {f for c in report.get("cells", []) for f in c.get("gateway", {}).get("framing", [])})
    markdown = render(report)
    print(markdown, flush=True)
    out_md.write_text(markdown)
    out_json.write_text(json.dumps(report, indent=1))
    log(f"wrote {out_md} and {out_json}")


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Benchmark the gateway against its upstream.")
    parser.add_argument("--quick", action="store_true", help="reduced matrix for a smoke check")
    parser.add_argument("--workers", type=int, default=WORKERS,
                        help=f"Celery worker processes (default {WORKERS})")
    parser.add_argument("--cells", metavar="P:C:N[,P:C:N...]",
                        help="run these cells instead of the matrix: pacing ms, concurrency, "
                             "total requests (e.g. 5:100:600 for A/B runs of one cell)")
    parser.add_argument("--streams", type=int, default=None,
                        help=f"concurrent streams of the final check (default {FULL_STREAMS}, "
                             f"--quick {QUICK_STREAMS}; 0 skips it)")
    parser.add_argument("--lockstep", action="store_true",
                        help="start every client of a cell at the same instant (by default their "
                             "starts are spread over one response's time, as independent "
                             "clients' are)")
    parser.add_argument("--agent-loops", default="1,50", metavar="C[,C...]",
                        help="concurrent loops of the agent-loop scenario (direct, HTTP, "
                             "WebSocket), each a 20-turn tool loop (default 1,50; 0 skips it)")
    parser.add_argument("--only-agent-loops", action="store_true",
                        help="skip the matrix and the streams check")
    parser.add_argument("--sockets", type=int, default=500,
                        help="WebSockets open at once in the sockets check, each running a "
                             "4-turn tool loop (default 500; 0 skips it)")
    parser.add_argument("--only-sockets", action="store_true",
                        help="run the sockets check alone")
    parser.add_argument("--chat-first", action="store_true",
                        help="in each cell, the chat completions target before the responses "
                             "one (paired rounds: run both orders)")
    parser.add_argument("--skip-chat", action="store_true",
                        help="leave out the chat completions target (A/B runs of the "
                             "Responses path alone)")
    parser.add_argument("--socket-target", action="store_true",
                        help="each cell also runs the WebSocket target: one socket per "
                             "response, its frames checked as a stream's events are")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "latest.md"),
                        help="markdown report path; the JSON goes next to it (.json)")
    args = parser.parse_args(argv)
    out_md = Path(args.out).resolve()
    out_json = out_md.with_suffix(".json")
    out_md.parent.mkdir(parents=True, exist_ok=True)
    logdir = ROOT / "bench" / "results" / "logs"
    logdir.mkdir(parents=True, exist_ok=True)
    for old in logdir.glob("*.log"):
        old.unlink()

    signal.signal(signal.SIGTERM, _raise_interrupt)
    matrix = QUICK_MATRIX if args.quick else FULL_MATRIX
    if args.cells:
        matrix = [tuple(int(n) for n in cell.split(":")) for cell in args.cells.split(",")]
    streams = QUICK_STREAMS if args.quick else FULL_STREAMS
    if args.streams is not None:
        streams = args.streams
    loops = [int(n) for n in args.agent_loops.split(",") if int(n) > 0]
    if args.only_agent_loops or args.only_sockets:
        matrix, streams = [], 0
    if args.only_sockets:
        loops = []
    redis_url = f"{REDIS_BASE_URL.rstrip('/')}/{REDIS_DB}"
    upstream = FakeUpstreamProcess(logdir)
    deployment: BenchDeployment | None = None
    started = time.monotonic()
    report: dict = {"meta": {"date": datetime.datetime.now().isoformat(timespec="seconds"),
                             "commit": _git_commit(), "quick": args.quick, "cpus": os.cpu_count(),
                             "python": platform.python_version(), "chunks": N_CHUNKS,
                             "worker_concurrency": WORKER_CONCURRENCY, "workers": args.workers,
                             "lockstep": args.lockstep}}
    try:
        log(f"starting fake upstream (logs in {logdir}) ...")
        upstream.start()
        log(f"fake upstream on {upstream.base_url}; fresh database {DB_NAME}, flushing Redis DB {REDIS_DB} ...")
        database_url = fresh_postgres_database(DB_NAME)
        redis.Redis.from_url(redis_url).flushdb()
        env = {"DATABASE_URL": database_url, "REDIS_URL": redis_url,
               "UPSTREAM_BASE_URL": upstream.base_url, "SECRET_KEY": "bench-" + "x" * 50,
               "EVENT_RETENTION_SECONDS": "120"}
        deployment = BenchDeployment(logdir, env, WORKER_CONCURRENCY, args.workers)
        deployment.manage("migrate", "-v0")
        api_key = deployment.new_api_key("bench")
        log(f"starting the web (Daphne) on port {deployment.port} and {args.workers} celery "
            f"worker(s) (--concurrency {WORKER_CONCURRENCY} each) ...")
        deployment.start()
        meter = Meter({"web": deployment.web.pid, "worker": [w.pid for w in deployment.workers],
                       "upstream": upstream.process.pid, "redis": redis_pid(redis_url),
                       "postgres": postgres_pid(POSTGRES_ADMIN_URL)}, database=DB_NAME,
                      redis_url=redis_url)
        processes = {"web": deployment.web, "upstream": upstream.process,
                     **{f"worker{n + 1}": w for n, w in enumerate(deployment.workers)}}
        asyncio.run(run_matrix(upstream.base_url, deployment.base_url, api_key, meter,
                               matrix, streams, processes, report, args.lockstep,
                               args.chat_first, args.skip_chat, args.socket_target))
        if loops:
            report["agent_loops"] = asyncio.run(agent_loop.run(
                upstream.base_url, deployment.base_url, api_key, loops, log))
        if args.sockets > 0:
            report["sockets"] = asyncio.run(socket_storm.run(
                deployment.base_url, api_key, args.sockets, log))
        check = report.get("streams_check")
        sockets = report.get("sockets")
        sockets_ok = sockets is None or not (sockets["failed"] or sockets["lost"]
                                             or sockets["reordered"] or sockets["differing"])
        return 0 if (check is None or check["passed"]) and sockets_ok else 1
    except KeyboardInterrupt:
        log("interrupted; stopping processes ...")
        report["meta"]["aborted"] = "interrupted"
        return 130
    except Aborted as exc:
        log(f"ABORTED: {exc}")
        report["meta"]["aborted"] = str(exc)
        return 2
    except Exception as exc:
        report["meta"]["aborted"] = f"error: {exc!r}"
        raise
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not skip the cleanup
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if report.get("cells") or report.get("agent_loops") or report.get("sockets"):
            try:
                write_report(report, started, out_md, out_json)
            except Exception as exc:
                log(f"could not write the report: {exc!r}")
        if deployment is not None:
            deployment.stop()
        upstream.stop()
        try:
            redis.Redis.from_url(redis_url).flushdb()
        except Exception:
            pass
        log("all processes stopped")


if __name__ == "__main__":
    sys.exit(main())
