"""The embedded mode's run queue is its process's memory: a run left queued when the process
is killed runs when the process starts again (watchdog.resend_runs_queued_before), once;
the run it was running is failed (its worker is gone).

(A SIGKILL also leaves the embedded PostgreSQL running for the next process; the test
stops it at the end.)"""
import shutil
import signal
import tempfile
from pathlib import Path

from tests.servers import Deployment, assert_embedded_postgres_stopped
from tests.test_e2e_durable import bench_text, client, requests_for, wait_for, wait_status

HELD = "bench-5-5-held1-embedded-restart"


def test_a_run_left_queued_by_a_killed_embedded_process_runs_when_it_starts(
        upstream, tmp_path_factory):
    pgdata = Path(tempfile.mkdtemp(prefix="gateway-embedded-")) / "pgdata"
    deployment = Deployment(tmp_path_factory.mktemp("embedded-restart"), {
        "EMBEDDED_PGDATA": str(pgdata), "UPSTREAM_BASE_URL": upstream.base_url,
        "EMBEDDED_WORKER_THREADS": "1"}, worker=False)
    try:
        deployment.manage("migrate", "-v0")
        key = deployment.new_api_key("emma")
        deployment.start()
        with client(deployment, key) as api:
            held = api.post("/responses", json={"model": HELD, "input": "holding",
                                                "background": True}).json()["id"]
            wait_status(api, held, {"in_progress"})  # the one run thread is busy with it
            waiting = api.post("/responses", json={"model": "bench-5-5", "input": "left queued",
                                                   "background": True}).json()["id"]
            assert api.get(f"/responses/{waiting}").json()["status"] == "queued"
            deployment.web.send_signal(signal.SIGKILL)
            deployment.web.wait()
            deployment.start_web()
            final = wait_status(api, waiting, {"completed", "failed"})
            assert final["output"][0]["content"][0]["text"] == bench_text(5)
            wait_for(lambda: api.get(f"/responses/{held}").json()["status"] == "failed",
                     "the run of the killed process to fail")
        assert requests_for(upstream, "left queued") == 1
    finally:
        upstream.release(HELD)
        deployment.stop()
        stop_embedded_postgres(pgdata)
        shutil.rmtree(pgdata.parent)


def stop_embedded_postgres(pgdata: Path) -> None:
    """The killed process could not stop the embedded PostgreSQL on its way out (the one
    started after it leaves it to the process that started it): stop it, and wait."""
    try:
        assert_embedded_postgres_stopped(pgdata)
    except AssertionError:  # it ran: asked to stop now
        wait_for(lambda: not (pgdata / "postmaster.pid").exists(), "PostgreSQL to stop")
