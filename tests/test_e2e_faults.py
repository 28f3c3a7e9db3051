"""Faults on the real processes over a real network (tests/netns.py, tests/hosts_cluster.py),
one cluster for the whole matrix; for each, the client's outcome and that nothing stored
is lost or generated twice:

- Postgres silently unreachable from a web host (packets dropped, Redis still reachable),
  every API key looked up (API_KEY_CACHE_SECONDS=0): a 503 JSON with Retry-After instead
  of a hang (a WebSocket: its error frame, then close code 4503), readiness red, the other
  web host serving; the link back, it serves again;
- Postgres silently unreachable from every worker host: a background response stays
  queued, its claims fail and give the run back instead of hanging; the link back, it is
  generated once and completes. A foreground response (its worker writes its row as it
  claims it) is answered 503 once its claim has waited DATABASE_WAIT_SECONDS, and never
  runs: the link back, it has no row and the upstream got nothing more; so is one whose
  row the web wrote (a job too large for its message), HTTP or WebSocket, its row removed
  once the link is back;
- every web and worker host cut silently from Postgres until their kernels gave up each
  connection (keepalive probes unanswered): the link back, the pools still hold those dead
  connections, and the very first requests are served all the same;
- the database turned read-only (a standby, a full disk's protection): a 503, nothing
  stored (background creates, whose row the web writes); writable again, served;
- the upstream accepting the connection and never answering: the (background) response
  fails with `request_timeout`, stored once;
- Postgres silently unreachable from every worker host in the middle of runs: a run whose
  store the link's return meets stores its result and completes; a run whose store is
  still refused after RUN_DATABASE_RETRY_SECONDS is failed by the watchdog on a web host,
  its client told the same `response.failed` as is stored; the workers' heartbeats (a
  thread of their own) stay fresh throughout, though their watchdog rounds wait on the
  database longer than the 2 s heartbeat TTL.

Needs root (network namespaces): skipped without, failed instead under CI=true.
"""
import json
import os
from concurrent.futures import ThreadPoolExecutor

import httpx
import psycopg
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from responses_app.delivery.jobs import MAX_JOB_BYTES
from tests.hosts_cluster import POSTGRES_PORT, WEB_PORT, Cluster, cluster_workdir
from tests.netns import Network, namespaces_available
from tests.invariants import check_stream
from tests.upstream_scenarios import SCENARIOS, text_of
from tests.test_e2e_durable import EventReader, bench_text, deltas, run_messages, wait_for

WAIT_SECONDS = 3  # DATABASE_WAIT_SECONDS and DATABASE_TCP_TIMEOUT_SECONDS of the cluster
STORE_RETRY_SECONDS = 10  # RUN_DATABASE_RETRY_SECONDS: attempts of up to 3 s fit in it


@pytest.fixture(scope="module")
def cluster():
    why = namespaces_available()
    if why is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)
    with Network(("front", "back")) as network, cluster_workdir("faults") as workdir:
        yield Cluster(network, workdir).start({
            **os.environ, "API_KEY_CACHE_SECONDS": "0",
            "DATABASE_WAIT_SECONDS": str(WAIT_SECONDS),
            "DATABASE_TCP_TIMEOUT_SECONDS": str(WAIT_SECONDS),
            "DATABASE_CONNECT_TIMEOUT_SECONDS": str(WAIT_SECONDS),
            "RUN_DATABASE_RETRY_SECONDS": str(STORE_RETRY_SECONDS),
            # every run reads the route table: a foreground run's route read meets the
            # outage too (with the 5 s cache, only when it had just expired: the foreground
            # cut test's client got "No worker started" once in four full runs)
            "UPSTREAM_ROUTES_CACHE_SECONDS": "0"})


def rows_with_input(cluster, marker: str) -> list[tuple[str, str]]:
    """(id, status) of the stored responses whose input holds `marker`."""
    with cluster.database() as database:
        return database.execute(
            "SELECT id, status FROM responses WHERE input_items::text LIKE %s ORDER BY id",
            [f"%{marker}%"]).fetchall()


def upstream_count(cluster, marker: str) -> int:
    return sum(1 for request in cluster.upstream_requests() if marker in str(request["body"]))


def readiness(web) -> tuple[int, dict]:
    answer = httpx.get(f"http://{web.address('front')}:{WEB_PORT}/readyz", timeout=30)
    return answer.status_code, answer.json()["checks"]["database"]


def socket_refused(cluster, web) -> tuple[dict, int]:
    """A WebSocket's error frame and close code, for a socket refused at once."""
    with connect(f"ws://{web.address('front')}:{WEB_PORT}/v1/responses", open_timeout=10,
                 additional_headers={"Authorization": f"Bearer {cluster.api_key}"}) as ws:
        frame = json.loads(ws.recv(30))
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(30)
    return frame, closed.value.rcvd.code


def test_a_web_host_cut_silently_from_postgres_answers_503_and_recovers(cluster):
    web, other = cluster.webs
    database = cluster.data.address("back")
    with cluster.client(web) as client:
        assert client.post("/responses", json={"model": "fake-text",
                                               "input": "warm up"}).status_code == 200
        web.drop(database, POSTGRES_PORT)
        try:
            refused = client.post("/responses", json={"model": "fake-text",
                                                      "input": "during the cut"})
            assert refused.status_code == 503
            assert refused.headers["retry-after"] == "5"
            assert refused.json()["error"]["code"] == "service_unavailable"
            assert refused.json()["error"]["type"] == "server_error"
            status, check = readiness(web)
            assert (status, check["ok"]) == (503, False)
            frame, close_code = socket_refused(cluster, web)
            assert (frame["status"], frame["error"]["code"], close_code) == (
                503, "service_unavailable", 4503)
            with cluster.client(other) as elsewhere:  # the other web host is not cut
                served = elsewhere.post("/responses", json={"model": "fake-text",
                                                            "input": "on the other host"})
                assert served.json()["status"] == "completed"
        finally:
            web.undrop(database, POSTGRES_PORT)
        wait_for(lambda: readiness(web)[0] == 200, "the web host's readiness", timeout=60)
        again = client.post("/responses", json={"model": "fake-text", "input": "after the cut"})
        assert again.json()["status"] == "completed"
    assert rows_with_input(cluster, "during the cut") == []
    assert upstream_count(cluster, "during the cut") == 0
    for marker in ("on the other host", "after the cut"):
        assert [status for _, status in rows_with_input(cluster, marker)] == ["completed"]
        assert upstream_count(cluster, marker) == 1
    assert "Traceback" not in cluster.log(web)


def test_an_upstream_that_accepts_and_never_answers_fails_the_response_once(cluster):
    with cluster.client(cluster.webs[0]) as client:
        created = client.post("/responses", json={
            "model": "fake-slow-600000", "input": "never answered", "background": True}).json()
        final = wait_for(lambda: (lambda r: r if r["status"] != "queued" and r["status"]
                                  != "in_progress" else None)(
            client.get(f"/responses/{created['id']}").json()),
            "the run to fail (UPSTREAM_TIMEOUT 10 s)", timeout=60)
    assert (final["status"], final["error"]["code"]) == ("failed", "request_timeout")
    assert rows_with_input(cluster, "never answered") == [(created["id"], "failed")]
    assert upstream_count(cluster, "never answered") == 1


def test_a_read_only_database_answers_503_and_stores_nothing(cluster):
    def sessions_read_only(on: bool) -> None:
        """Every session's next transaction read-only (a reload reaches open sessions)."""
        admin = cluster.database_url.rsplit("/", 1)[0] + "/postgres"
        with psycopg.connect(admin, autocommit=True) as database:
            database.execute("SET default_transaction_read_only = off")
            database.execute("ALTER SYSTEM SET default_transaction_read_only = on" if on
                             else "ALTER SYSTEM RESET default_transaction_read_only")
            database.execute("SELECT pg_reload_conf()")

    with cluster.client(cluster.webs[0]) as client:
        sessions_read_only(True)
        try:
            # pg_reload_conf only signals the postmaster, which re-reads the file and signals
            # every session when it next runs: wait until the web meets the read-only setting
            wait_for(lambda: client.post("/responses", json={
                "model": "fake-text", "background": True, "input": "probe"}).status_code == 503,
                "the reload to reach the web's sessions", timeout=30)
            # background: the web writes the row itself (a foreground run may carry its row
            # to the worker, which retries its claim until the database takes it)
            answers = [client.post("/responses", json={"model": "fake-text", "background": True,
                                                       "input": f"read-only {n}"})
                       for n in range(3)]
        finally:
            sessions_read_only(False)
        assert [(a.status_code, a.json()["error"]["code"], a.headers["retry-after"])
                for a in answers] == [(503, "service_unavailable", "5")] * 3
        wait_for(lambda: client.post("/responses", json={
            "model": "fake-text", "input": "writable again"}).status_code == 200,
            "the web host to serve again", timeout=30)
    assert rows_with_input(cluster, "read-only") == []
    assert [status for _, status in rows_with_input(cluster, "writable again")] == [
        "completed"]


def stored_row(cluster, response_id: str) -> tuple[str, dict]:
    with cluster.database() as database:
        return database.execute("SELECT status, resource FROM responses WHERE id = %s",
                                [response_id]).fetchone()


def output_text(response: dict) -> str:
    return "".join(part["text"] for item in response["output"] if item["type"] == "message"
                   for part in item["content"])


def test_workers_cut_from_postgres_mid_run_store_the_result_or_fail_it_everywhere(cluster):
    database = cluster.data.address("back")
    workers = cluster.live_workers()
    kept, lost = "bench-6-20-held3-store-kept", "bench-6-20-held3-store-lost"
    with cluster.client(cluster.webs[0]) as client, \
            client.stream("POST", "/responses", json={"model": kept, "input": "kept",
                                                      "stream": True}) as kept_stream, \
            client.stream("POST", "/responses", json={"model": lost, "input": "lost",
                                                      "stream": True}) as lost_stream:
        readers = {"kept": EventReader(kept_stream), "lost": EventReader(lost_stream)}
        for reader in readers.values():  # both claimed, three words out, held upstream
            reader.read_until(lambda e, r=reader: len(deltas(r.events)) == 3)
        ids = {name: reader.events[0]["response"]["id"] for name, reader in readers.items()}
        for worker in cluster.workers:
            worker.drop(database, POSTGRES_PORT)
        try:
            cluster.release(lost)  # its store is refused until the watchdog fails it
            lost_events = readers["lost"].read_to_end()
            assert cluster.live_workers() == workers  # alive all along: not failed over
            cluster.release(kept)
            wait_for(lambda: f"storing {ids['kept']} failed" in "".join(
                cluster.log(w) for w in cluster.workers), "the kept run's store to fail",
                timeout=30)
        finally:
            for worker in cluster.workers:
                worker.undrop(database, POSTGRES_PORT)
        kept_events = readers["kept"].read_to_end()  # stored on a later attempt
    assert readers["lost"].done and readers["kept"].done
    failed, completed = check_stream(lost_events), check_stream(kept_events)
    assert (lost_events[-1]["type"], failed["status"], failed["error"]) == (
        "response.failed", "failed",
        {"code": "server_error", "message": "The response could not be stored."})
    assert output_text(failed) == bench_text(6)  # what it produced is kept
    assert (kept_events[-1]["type"], completed["status"], output_text(completed)) == (
        "response.completed", "completed", bench_text(6))
    assert stored_row(cluster, ids["lost"]) == ("failed", failed)  # what its client saw
    assert stored_row(cluster, ids["kept"]) == ("completed", completed)
    assert [upstream_count(cluster, model) for model in (kept, lost)] == [1, 1]


def test_the_requests_after_a_silent_cut_that_outlasted_the_pools_connections_are_served(
        cluster):
    """Every web and worker host cut silently from Postgres until its kernel has given up
    each of its connections (an idle pooled one once its keepalive probes went unanswered
    DATABASE_TCP_TIMEOUT_SECONDS): the link back, the pools still hold those, dead, and the
    very first requests are served all the same (each pool discards a dead connection it
    would hand out and takes the next at once), not answered 503 (the first two were
    before: the web's API key lookup on a dead connection; with only the workers cut, a
    worker's route read on one)."""
    database = cluster.data.address("back")
    hosts = [*cluster.webs, *cluster.workers]
    # requests at once: each worker's pools hold several connections, idle once they end
    with ThreadPoolExecutor(16) as clients:
        warm = list(clients.map(lambda n: served_text(cluster, f"before the cut {n}"),
                                range(16)))
    assert warm == [(200, "completed", text_of(SCENARIOS["fake-text"]))] * 16
    for host in hosts:
        host.drop(database, POSTGRES_PORT)
    try:
        wait_for(lambda: not any(host.connections_to(database, POSTGRES_PORT)
                                 for host in hosts),
                 "every host's kernel to give up its connections to Postgres", timeout=60)
    finally:
        for host in hosts:
            host.undrop(database, POSTGRES_PORT)
    after = [served_text(cluster, f"after the long cut {n}") for n in range(4)]
    assert after == [(200, "completed", text_of(SCENARIOS["fake-text"]))] * 4
    assert [status for _, status in rows_with_input(cluster, "after the long cut")] == [
        "completed"] * 4
    assert upstream_count(cluster, "after the long cut") == 4


def served_text(cluster, text: str) -> tuple[int, str | None, str | None]:
    """Status, response status and output text of a foreground `fake-text` response."""
    with cluster.client(cluster.webs[0]) as client:
        answer = client.post("/responses", json={"model": "fake-text", "input": text})
    body = answer.json()
    if answer.status_code != 200:
        return answer.status_code, None, body["error"]["message"]
    return answer.status_code, body["status"], output_text(body)


def test_workers_cut_silently_from_postgres_run_the_response_once_it_is_back(cluster):
    database = cluster.data.address("back")
    with cluster.client(cluster.webs[0]) as client:
        for worker in cluster.workers:
            worker.drop(database, POSTGRES_PORT)
        try:
            answer = client.post("/responses", json={
                "model": "fake-text", "input": "workers cut", "background": True})
            assert answer.status_code == 200, answer.text
            created = answer.json()
            assert created["status"] == "queued"
            wait_for(lambda: "goes back to the queue" in "".join(
                cluster.log(w) for w in cluster.workers),
                "a worker's claim to fail (and give the run back)", timeout=60)
            assert client.get(f"/responses/{created['id']}").json()["status"] == "queued"
            refused = client.post("/responses", json={"model": "fake-text",
                                                      "input": "foreground cut"})
            upstream_during = upstream_count(cluster, "foreground cut")  # beside its claim
        finally:
            for worker in cluster.workers:
                worker.undrop(database, POSTGRES_PORT)
        wait_for(lambda: client.get(f"/responses/{created['id']}").json()["status"]
                 == "completed", "the response to complete", timeout=60)
    assert (refused.status_code, refused.headers["retry-after"], refused.json()) == (
        503, "5", {"error": {"message": "The database did not answer within 3 s; retry "
                                        "shortly.", "type": "server_error", "param": None,
                             "code": "service_unavailable"}})
    wait_for(lambda: "foreground cut" not in run_messages(cluster.redis()),
             "the abandoned run to settle", timeout=60)
    assert rows_with_input(cluster, "workers cut") == [(created["id"], "completed")]
    assert rows_with_input(cluster, "foreground cut") == []
    assert upstream_count(cluster, "workers cut") == 1
    assert upstream_count(cluster, "foreground cut") == upstream_during


def test_a_client_whose_row_the_web_wrote_is_answered_503_when_no_worker_can_claim_it(cluster):
    """A foreground run too large for its message (MAX_JOB_BYTES), or one that reads stored
    state (a chain): the web writes its row and the message is its id. The workers cut from Postgres,
    its claim is given up on DATABASE_WAIT_SECONDS after the run started, as a carried
    run's is: its client (HTTP, streamed or not, and a WebSocket turn) is answered the same
    503 then, not "No worker started this response in time" after UPSTREAM_TIMEOUT +
    UPSTREAM_CONNECT_TIMEOUT (20 s here: what it got before, its run then generated once
    the link was back); the link back, its row is removed and the upstream got nothing."""
    database = cluster.data.address("back")
    web = cluster.webs[0]
    large = "x" * MAX_JOB_BYTES
    answers = []
    with cluster.client(web) as client:
        # the first request since the last test's cut healed: served
        chained = client.post("/responses", json={"model": "fake-text",
                                                  "input": "chained to"}).json()
        assert (chained["status"], output_text(chained)) == (
            "completed", text_of(SCENARIOS["fake-text"]))
        for worker in cluster.workers:
            worker.drop(database, POSTGRES_PORT)
        try:
            for body in ({"input": f"web row 1 {large}"},
                         {"input": f"web row 2 {large}", "stream": True},
                         {"input": "web row 3", "previous_response_id": chained["id"]}):
                with client.stream("POST", "/responses",
                                   json={"model": "fake-text", **body}) as answer:
                    answer.read()  # a stream's failed start: a JSON error, no event
                answers.append((answer.status_code, answer.headers.get("retry-after"),
                                answer.json()))
            with connect(f"ws://{web.address('front')}:{WEB_PORT}/v1/responses",
                         open_timeout=10, max_size=None, additional_headers={
                             "Authorization": f"Bearer {cluster.api_key}"}) as ws:
                ws.send(json.dumps({"type": "response.create", "model": "fake-text",
                                    "input": f"web row 4 {large}"}))
                frame = json.loads(ws.recv(30))
            rows = rows_with_input(cluster, "web row ")  # the rows the web wrote, unclaimed
        finally:
            for worker in cluster.workers:
                worker.undrop(database, POSTGRES_PORT)
    message = f"The database did not answer within {WAIT_SECONDS} s; retry shortly."
    error = {"message": message, "type": "server_error", "param": None,
             "code": "service_unavailable"}
    assert answers == [(503, "5", {"error": error})] * 3
    assert frame == {"type": "error", "status": 503,
                     "error": {**error, "headers": {"retry-after": "5"}}}
    assert [status for _, status in rows] == ["queued"] * 4
    ids = [response_id for response_id, _ in rows]
    wait_for(lambda: not any(i in run_messages(cluster.redis()) for i in ids),
             "the abandoned runs to settle", timeout=60)
    assert rows_with_input(cluster, "web row ") == []
    assert upstream_count(cluster, "web row ") == 0
