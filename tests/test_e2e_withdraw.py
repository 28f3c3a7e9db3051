"""A run no worker started in time is taken back, on the real stack: its client's 503
says it will not run, its message leaves the run queue, the row the web wrote for it is
removed and its tenant's run slot is free again; a worker started afterwards never runs
it (the upstream sees only the request made after the worker came).

No worker runs at first; the web gives up on a run after UPSTREAM_TIMEOUT +
UPSTREAM_CONNECT_TIMEOUT (3 s here)."""
from concurrent.futures import ThreadPoolExecutor

import psycopg
import redis

from tests.conftest import production_deployment
from tests.deployment_setup import provision
from tests.servers import SPARE_REDIS_DB
from tests.test_e2e_durable import wait_for

NOT_STARTED = {"type": "server_error", "param": None, "code": "service_unavailable"}


def worker_pids(redis_client) -> set[str]:
    """The process ids of the workers whose heartbeat is in Redis (ids host:pid:random)."""
    return {key.decode().removeprefix("gw:worker:").split(":")[1]
            for key in redis_client.scan_iter(match="gw:worker:*")}


def not_started(what: str) -> dict:
    return {"error": {"message": f"No worker started this {what} in time, and it will not "
                                 "run; retry shortly.", **NOT_STARTED}}


def test_a_run_no_worker_started_in_time_is_taken_back_and_never_runs(
        upstream, tmp_path_factory):
    with production_deployment(upstream, tmp_path_factory, "withdraw", SPARE_REDIS_DB,
                               UPSTREAM_TIMEOUT="2", UPSTREAM_CONNECT_TIMEOUT="1") as deployment:
        deployment.stop_worker()
        keys = provision(deployment, {"open": {"keys": 1, "limits": {}},
                                      "one-run": {"keys": 1, "limits": {"concurrent_runs": 1}}})
        queue = redis.Redis.from_url(deployment.env["REDIS_URL"])
        upstream.clear()
        with deployment.client(keys["open"][0]) as api, \
                deployment.client(keys["one-run"][0]) as limited:
            conversation = api.post("/conversations").json()["id"]
            bodies = [
                (api, "/responses", {"model": "fake-echo", "input": "a", "stream": True}),
                (api, "/responses", {"model": "fake-echo", "input": "b"}),
                (api, "/responses", {"model": "fake-echo", "input": "c",  # a row the web writes
                                     "conversation": conversation}),
                (api, "/chat/completions", {"model": "fake-echo",
                                            "messages": [{"role": "user", "content": "d"}]}),
                (limited, "/responses", {"model": "fake-echo", "input": "e"}),
            ]
            with ThreadPoolExecutor(len(bodies)) as pool:
                replies = list(pool.map(lambda call: call[0].post(call[1], json=call[2]),
                                        bodies))
            # the one-run tenant's slot was released: its next run is admitted (not a 429)
            again = limited.post("/responses", json={"model": "fake-echo", "input": "f"})
            assert [(reply.status_code, reply.json()) for reply in replies + [again]] == (
                [(503, not_started("response"))] * 3 + [(503, not_started("chat completion"))]
                + [(503, not_started("response"))] * 2)
            assert queue.llen("gw:runs") == 0
            with psycopg.connect(deployment.env["DATABASE_URL"]) as database:
                assert database.execute("SELECT id FROM responses").fetchall() == []

            deployment.start_worker()  # its run waits 3 s for a worker: once it is up
            wait_for(lambda: str(deployment.worker.pid) in worker_pids(queue),
                     "the new worker's heartbeat")
            after = api.post("/responses", json={"model": "fake-echo", "input": "after"})
        assert (after.status_code, after.json()["status"]) == (200, "completed")
        assert [request["body"]["messages"][-1]["content"] for request in upstream.requests()
                if request["path"] == "/v1/chat/completions"] == ["after"]
