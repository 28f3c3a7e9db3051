"""Durable runs on the real stack, with faults injected for real: background mode, cancel,
resuming a stream on any web process, a worker killed mid-run, a web process restarted
mid-stream, a client that leaves a store=false stream, and expired event streams.

Every stream goes through the invariant checker and the SDK/Open Responses oracles.
"""
import signal
import time

import httpx
import psycopg
import pytest
import redis

from tests.conftest import production_deployment
from tests.invariants import check_cancelled_stream, check_stream
from tests.oracles import validate_event, validate_response
from tests.servers import SPARE_REDIS_DB, Deployment
from tests.sse import parse_sse

RETENTION_SECONDS = 4


def bench_text(n: int, upto: int | None = None) -> str:
    return "".join(f"w{i} " for i in range(n if upto is None else upto))


@pytest.fixture(scope="module")
def durable(upstream, tmp_path_factory):
    """A deployment with a fast watchdog (2 s heartbeats) and a short event retention; its
    API keys remembered long, so that requests during the Postgres outage reach a worker."""
    with production_deployment(upstream, tmp_path_factory, "durable", SPARE_REDIS_DB,
                               WORKER_HEARTBEAT_TTL_SECONDS="2", WATCHDOG_INTERVAL_SECONDS="0.5",
                               EVENT_RETENTION_SECONDS=str(RETENTION_SECONDS),
                               QUEUED_REDISPATCH_SECONDS="600",
                               API_KEY_CACHE_SECONDS="600") as deployment:
        deployment.key = deployment.new_api_key("dora")
        yield deployment


def client(deployment: Deployment, key: str, base_url: str | None = None) -> httpx.Client:
    return httpx.Client(base_url=base_url or deployment.base_url, timeout=30,
                        headers={"Authorization": f"Bearer {key}"})


@pytest.fixture
def api(durable):
    with client(durable, durable.key) as http:
        yield http


class EventReader:
    """Reads an SSE response event by event (validating each), remembering the raw bytes."""

    def __init__(self, response: httpx.Response):
        assert response.status_code == 200, response.read()
        self.lines = response.iter_lines()
        self.events: list[dict] = []
        self.done = False

    def next_event(self) -> dict | None:
        import json

        for line in self.lines:
            if line == "data: [DONE]":
                self.done = True
                return None
            if line.startswith("data: "):
                event = json.loads(line[6:])
                validate_event(event)
                self.events.append(event)
                return event
        return None

    def read_until(self, predicate) -> None:
        while (event := self.next_event()) is not None:
            if predicate(event):
                return
        raise AssertionError(f"the stream ended first: {[e['type'] for e in self.events]}")

    def read_to_end(self) -> list[dict]:
        while self.next_event() is not None:
            pass
        return self.events


def cancelled_mid_stream(client: httpx.Client, body: dict, until) -> tuple[str, dict, list]:
    """Stream `body`, cancel the response once an event satisfies `until`, read the stream
    to its end: (response id, the cancel's answer, every event)."""
    with client.stream("POST", "/responses", json=body) as response:
        reader = EventReader(response)
        reader.read_until(until)
        response_id = reader.events[0]["response"]["id"]
        cancelled = client.post(f"/responses/{response_id}/cancel").json()
        return response_id, cancelled, reader.read_to_end()


def deltas(events: list[dict]) -> list[dict]:
    return [e for e in events if e["type"] == "response.output_text.delta"]


def wait_for(condition, what: str, timeout: float = 30.0, every: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"gave up waiting for {what}")


def wait_status(api, response_id: str, statuses: set[str]) -> dict:
    return wait_for(lambda: (body := api.get(f"/responses/{response_id}").json())["status"]
                    in statuses and body, f"{response_id} to reach {statuses}")


def requests_for(upstream, marker: str) -> int:
    return sum(1 for request in upstream.requests()
               if marker in str(request.get("body")))


# --- background mode ------------------------------------------------------------------------

def test_background_returns_queued_and_polls_to_completed(api):
    created = api.post("/responses", json={"model": "bench-20-20", "input": "bg poll",
                                           "background": True})
    assert created.status_code == 200
    body = created.json()
    validate_response(body)
    assert (body["status"], body["background"], body["output"]) == ("queued", True, [])
    final = wait_status(api, body["id"], {"completed", "failed", "incomplete", "cancelled"})
    validate_response(final)
    assert final["status"] == "completed"
    assert final["output"][0]["content"][0]["text"] == bench_text(20)


def test_background_needs_store(api):
    refused = api.post("/responses", json={"model": "fake-text", "input": "x",
                                           "background": True, "store": False})
    assert refused.status_code == 400
    assert refused.json()["error"]["param"] == "background"


def test_background_failure_before_the_first_byte_is_a_failed_response(api):
    created = api.post("/responses", json={"model": "fake-500", "input": "bg fail",
                                           "background": True}).json()
    final = wait_status(api, created["id"], {"failed", "completed"})
    assert final["status"] == "failed"
    assert final["error"] == {"code": "server_error", "message": (
        "The upstream model server failed with HTTP 500: upstream exploded")}
    replay = api.get(f"/responses/{created['id']}", params={"stream": "true"})
    events = parse_sse(replay.content).events
    for event in events:
        validate_event(event)
    check_stream(events)
    assert [e["type"] for e in events] == ["response.created", "response.in_progress",
                                           "response.failed"]


# --- resuming streams -----------------------------------------------------------------------

def test_a_stream_resumes_on_a_second_web_process_while_the_first_still_streams(
        durable, api, tmp_path):
    second = Deployment(tmp_path, {k: durable.env[k] for k in ("DATABASE_URL", "REDIS_URL")},
                        worker=False)
    second.env.update({k: v for k, v in durable.env.items() if k not in ("PYTHONUNBUFFERED",)})
    second.start()
    try:
        with api.stream("POST", "/responses", json={
                "model": "bench-60-40", "input": "two webs", "background": True,
                "stream": True}) as first_stream:
            first = EventReader(first_stream)
            first.read_until(lambda e: len(deltas(first.events)) >= 5)
            seen = first.events[-1]["sequence_number"]
            response_id = first.events[0]["response"]["id"]
            with client(second, durable.key) as other, other.stream(
                    "GET", f"/responses/{response_id}",
                    params={"stream": "true", "starting_after": seen}) as resumed_stream:
                resumed = EventReader(resumed_stream).read_to_end()
            whole = first.read_to_end()
    finally:
        second.stop()
    assert whole == first.events
    assert first.events[:seen + 1] + resumed == whole  # every event once, same numbers
    final = check_stream(whole)
    assert final["output"][0]["content"][0]["text"] == bench_text(60)


def test_a_web_restart_mid_stream_loses_nothing(durable, api, upstream):
    # the upstream holds after 40 words until the client has resumed: however long the
    # restart takes, the run cannot end and its events expire (RETENTION_SECONDS) before
    model = "bench-80-40-held40-restart"
    with api.stream("POST", "/responses", json={"model": model, "input": "restart web",
                                                "stream": True}) as stream:
        before = EventReader(stream)
        before.read_until(lambda e: len(deltas(before.events)) >= 5)
        durable.web.send_signal(signal.SIGKILL)
        with pytest.raises(httpx.HTTPError):
            before.read_to_end()
    durable.web.wait()
    durable.start_web()
    seen = before.events[-1]["sequence_number"]
    response_id = before.events[0]["response"]["id"]
    with api.stream("GET", f"/responses/{response_id}",
                    params={"stream": "true", "starting_after": seen}) as stream:
        upstream.release(model)  # the resumed reader is subscribed once its headers came
        after = EventReader(stream).read_to_end()
    joined = before.events + after
    final = check_stream(joined)
    assert final["output"][0]["content"][0]["text"] == bench_text(80)
    replay = parse_sse(api.get(f"/responses/{response_id}", params={"stream": "true"}).content)
    assert replay.events == joined  # one uninterrupted run


def test_replay_of_a_finished_response_and_its_expiry(api):
    with api.stream("POST", "/responses", json={"model": "fake-text", "input": "replay",
                                                "stream": True}) as stream:
        original = EventReader(stream).read_to_end()
    response_id = original[0]["response"]["id"]
    replay = parse_sse(api.get(f"/responses/{response_id}", params={"stream": "true"}).content)
    assert replay.events == original
    tail = parse_sse(api.get(f"/responses/{response_id}",
                             params={"stream": "true", "starting_after": 3}).content)
    assert tail.events == original[4:]
    bad = api.get(f"/responses/{response_id}", params={"stream": "true", "starting_after": "x"})
    assert (bad.status_code, bad.json()["error"]["param"]) == (400, "starting_after")
    time.sleep(RETENTION_SECONDS + 1.5)
    expired = api.get(f"/responses/{response_id}", params={"stream": "true"})
    assert expired.status_code == 404
    assert expired.json()["error"]["code"] == "event_stream_expired"
    assert api.get(f"/responses/{response_id}").json()["status"] == "completed"


# --- cancel ---------------------------------------------------------------------------------

def test_cancel_stops_a_background_run_mid_stream(api, clean_upstream):
    with api.stream("POST", "/responses", json={"model": "bench-400-25", "input": "cancel me",
                                                "background": True, "stream": True}) as stream:
        reader = EventReader(stream)
        reader.read_until(lambda e: len(deltas(reader.events)) >= 5)
        response_id = reader.events[0]["response"]["id"]
        cancelled = api.post(f"/responses/{response_id}/cancel")
        assert cancelled.status_code == 200
        events = reader.read_to_end()
    assert reader.done
    body = cancelled.json()
    validate_response(body)
    assert body["status"] == "cancelled"
    output = check_cancelled_stream(events)
    streamed = "".join(e["delta"] for e in deltas(events))
    assert bench_text(400).startswith(streamed) and streamed != bench_text(400)
    stored = api.get(f"/responses/{response_id}").json()
    assert stored["status"] == "cancelled"
    assert stored["output"] == output
    assert stored["output"][0]["status"] == "incomplete"
    assert stored["output"][0]["content"][0]["text"] == streamed
    wait_for(lambda: clean_upstream.stats()["disconnects"] == 1, "the upstream to see the close")
    assert clean_upstream.stats()["completed"] == 0
    again = api.post(f"/responses/{response_id}/cancel")
    assert again.json() == stored  # idempotent


def test_cancel_rules(api, durable):
    finished = api.post("/responses", json={"model": "fake-text", "input": "done already",
                                            "background": True}).json()
    finished = wait_status(api, finished["id"], {"completed"})
    assert api.post(f"/responses/{finished['id']}/cancel").json() == finished
    foreground = api.post("/responses", json={"model": "fake-text", "input": "fg"}).json()
    refused = api.post(f"/responses/{foreground['id']}/cancel")
    assert refused.status_code == 400
    assert set(refused.json()["error"]) == {"message", "type", "param", "code"}
    assert api.post("/responses/resp_nope/cancel").status_code == 404
    with client(durable, durable.new_api_key("eve")) as other:
        assert other.post(f"/responses/{finished['id']}/cancel").status_code == 404


def test_cancel_of_a_queued_response_means_it_never_runs(durable, api, clean_upstream):
    durable.stop_worker()
    try:
        queued = api.post("/responses", json={"model": "fake-text", "input": "never run me",
                                              "background": True}).json()
        assert queued["status"] == "queued"
        cancelled = api.post(f"/responses/{queued['id']}/cancel").json()
        assert cancelled["status"] == "cancelled"
        replay = parse_sse(api.get(f"/responses/{queued['id']}", params={"stream": "true"}).content)
        assert replay.events == [] and replay.done
    finally:
        durable.start_worker()
    # a fresh request proves the worker is up and has drained its queue
    assert api.post("/responses", json={"model": "fake-text", "input": "after"}).status_code == 200
    assert requests_for(clean_upstream, "never run me") == 0
    assert api.get(f"/responses/{queued['id']}").json()["status"] == "cancelled"


def test_cancelling_a_queued_response_gives_its_run_slot_back(durable):
    key = durable.new_api_key("one-at-a-time")
    durable.manage("set_limits", "one-at-a-time", "--concurrent-runs", "1")
    with client(durable, key) as api:
        durable.stop_worker()
        try:
            queued = api.post("/responses", json={"model": "fake-text", "input": "wait",
                                                  "background": True}).json()
            refused = api.post("/responses", json={"model": "fake-text", "input": "second"})
            assert refused.status_code == 429  # the queued run holds the only slot
            assert api.post(f"/responses/{queued['id']}/cancel").json()["status"] == "cancelled"
        finally:
            durable.start_worker()
        answer = api.post("/responses", json={"model": "fake-text", "input": "third"})
        assert answer.status_code == 200, answer.text


def test_a_store_false_client_that_leaves_stops_the_upstream_call(api, clean_upstream):
    with api.stream("POST", "/responses", json={"model": "bench-400-25", "input": "ephemeral",
                                                "stream": True, "store": False}) as stream:
        reader = EventReader(stream)
        reader.read_until(lambda e: len(deltas(reader.events)) >= 3)
    wait_for(lambda: clean_upstream.stats()["disconnects"] == 1, "the upstream to see the close")
    assert clean_upstream.stats()["completed"] == 0


# --- crash safety ---------------------------------------------------------------------------

def test_a_worker_killed_mid_run_fails_the_response_and_ends_the_stream(
        durable, api, clean_upstream):
    try:
        with api.stream("POST", "/responses", json={"model": "bench-400-25", "input": "kill -9",
                                                    "stream": True}) as stream:
            reader = EventReader(stream)
            reader.read_until(lambda e: len(deltas(reader.events)) >= 5)
            durable.worker.send_signal(signal.SIGKILL)
            events = reader.read_to_end()
        durable.worker.wait()
    finally:
        durable.start_worker()
    assert reader.done
    final = check_stream(events)
    assert events[-1]["type"] == "response.failed"
    assert final["error"] == {"code": "server_error", "message": (
        "The worker running this response stopped before it finished; the response was not "
        "completed.")}
    streamed = "".join(e["delta"] for e in deltas(events))
    assert final["output"][0]["content"][0]["text"] == streamed
    stored = api.get(f"/responses/{final['id']}").json()
    assert stored == final
    assert api.post("/responses", json={"model": "fake-text", "input": "next"}).status_code == 200
    assert requests_for(clean_upstream, "kill -9") == 1  # never generated twice


# --- Postgres briefly away ------------------------------------------------------------------

def outage_503(message: str) -> tuple[int, str, dict]:
    return 503, "5", {"error": {"message": message, "type": "server_error", "param": None,
                                "code": "service_unavailable"}}


def run_messages(queue: redis.Redis) -> str:
    """Every run message on the queue or on a worker's processing list, as one string."""
    keys = ["gw:runs", *queue.scan_iter(match="gw:processing:*")]
    return str([queue.lrange(key, 0, -1) for key in keys])


def rows_with_input(deployment: Deployment, marker: str) -> list[tuple[str, str]]:
    with psycopg.connect(deployment.env["DATABASE_URL"]) as database:
        return database.execute("SELECT id, status FROM responses WHERE input_items::text "
                                "LIKE %s ORDER BY id", [f"%{marker}%"]).fetchall()


def test_postgres_unavailable_gives_503s_and_the_service_recovers(durable, api, upstream):
    kept = api.post("/responses", json={"model": "fake-text", "input": "kept"}).json()
    logged = durable.logs()
    database = durable.env["DATABASE_URL"].rsplit("/", 1)[1]
    admin = durable.env["DATABASE_URL"].rsplit("/", 1)[0] + "/postgres"
    # A foreground run's worker writes its row as it claims it: its client waits for the
    # claim DATABASE_WAIT_SECONDS (5 s), not the 15 s after which the web gives up on a run
    # no worker started (what it got before, its run then generated once the database was
    # back): a client that waits 12 s fails that.
    with psycopg.connect(admin, autocommit=True) as conn, client(durable, durable.key) as quick:
        quick.timeout = httpx.Timeout(12)
        conn.execute(f'ALTER DATABASE "{database}" WITH ALLOW_CONNECTIONS false')
        conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                     "WHERE datname = %s AND pid <> pg_backend_pid()", [database])
        try:
            answers = [api.get(f"/responses/{kept['id']}")]
            for body in ({"input": "outage 1"}, {"input": "outage 2"},
                         {"input": "outage 3", "stream": True}):
                with quick.stream("POST", "/responses",
                                  json={"model": "fake-text", **body}) as answer:
                    answer.read()  # a stream's failed start: a JSON error, no event
                    answers.append(answer)
            # the first claim to meet the outage went out beside its upstream call (closed
            # when the claim failed); the worker claims first from then on
            upstream_during = requests_for(upstream, "outage 1")
        finally:
            conn.execute(f'ALTER DATABASE "{database}" WITH ALLOW_CONNECTIONS true')
    assert [(a.status_code, a.headers.get("retry-after"), a.json()) for a in answers] == [
        outage_503("A backing service (database or message broker) is unavailable; retry "
                   "shortly."),
        *[outage_503("The database did not answer within 5 s; retry shortly.")] * 3]
    answers = []

    def recovered():
        # creating (the event loop's connections) and reading (Django's) both work again
        answers.append(api.post("/responses", json={"model": "fake-text", "input": "back"}))
        if answers[-1].status_code == 200:
            answers.append(api.get(f"/responses/{kept['id']}"))
        return answers[-1].status_code == 200

    try:
        # the pools give a lost connection up after DATABASE_RECONNECT_SECONDS (5 s) and the
        # next request connects at once: recovery takes a second, not the pool's backoff
        # grown through the outage (psycopg_pool's own 300 s: 11.9 s after this outage,
        # minutes after a long one), nor a restart
        wait_for(recovered, "the service to recover", timeout=30, every=0.5)
    except AssertionError:
        raise AssertionError(f"still failing: {answers[-1].status_code} {answers[-1].text}")
    assert api.get(f"/responses/{kept['id']}").json() == kept
    # the abandoned runs' messages are settled without running: nothing stored, the
    # upstream not called again, no crash logged
    with redis.Redis.from_url(durable.env["REDIS_URL"]) as queue:
        wait_for(lambda: "outage " not in run_messages(queue), "the abandoned runs to settle")
    assert rows_with_input(durable, "outage ") == []
    assert [requests_for(upstream, f"outage {n}") for n in (1, 2, 3)] == [upstream_during, 0, 0]
    logs = durable.logs()
    assert (logs.count("crashed"), logs.count("its client answered 503")) == (
        logged.count("crashed"), logged.count("its client answered 503") + 3)
