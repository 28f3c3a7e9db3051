"""Runs sent with their job, on the production path: the worker writes the response's row
as it claims it, while it calls the upstream (the web writes no row for them), and a run
that does not get its claim publishes, stores and charges nothing and closes its upstream
call at once."""
import orjson
import psycopg
import redis

from responses_app.delivery.jobs import JOB_COLUMNS, RUN_QUEUE_KEY
from tests.invariants import check_stream
from tests.sse import parse_sse
from tests.test_e2e_durable import wait_for

def job_of(database, response_id: str, **changes) -> dict:
    row = database.execute(f"SELECT {', '.join(JOB_COLUMNS)} FROM responses WHERE id = %s",
                           [response_id]).fetchone()
    return {**dict(zip(JOB_COLUMNS, row)), **changes}


def send(deployment, response_id: str, job: dict) -> None:
    redis.Redis.from_url(deployment.env["REDIS_URL"]).lpush(
        RUN_QUEUE_KEY, orjson.dumps({"id": response_id, "job": job}))


def test_a_run_sent_with_its_job_writes_its_row_and_streams(production, api):
    model = api.post("/responses", json={"model": "fake-text", "input": "a model row"}).json()
    new_id = "resp_" + "a1" * 24
    with psycopg.connect(production.env["DATABASE_URL"], autocommit=True) as database:
        job = job_of(database, model["id"])
        job["resource"] = {**job["resource"], "id": new_id, "status": "queued", "output": [],
                           "usage": None, "completed_at": None}
        send(production, new_id, job)  # no row: the run writes it (created now)
        finished = wait_for(lambda: (body := api.get(f"/responses/{new_id}").json()).get(
            "status") in {"completed", "failed"} and body, f"{new_id} to end")
        created, worker = database.execute(
            "SELECT created_at > now() - interval '1 minute', worker_id FROM responses "
            "WHERE id = %s", [new_id]).fetchone()
    assert (created, worker is not None) == (True, True)
    assert finished["status"] == "completed"
    assert finished["output"][0]["content"][0]["text"] == model["output"][0]["content"][0]["text"]
    replay = parse_sse(api.get(f"/responses/{new_id}", params={"stream": "true"}).content)
    check_stream(replay.events)
    assert replay.events[-1]["response"] == finished


def test_a_run_that_does_not_get_its_claim_leaves_no_trace(production, api, clean_upstream):
    finished = api.post("/responses", json={"model": "fake-text", "input": "done once"}).json()
    events = redis.Redis.from_url(production.env["REDIS_URL"])
    stream_key = f"gw:events:{finished['id']}"
    entries = events.xlen(stream_key)
    clean_upstream.clear()
    with psycopg.connect(production.env["DATABASE_URL"], autocommit=True) as database:
        # the same response's run again (a duplicated message), on a 10 s upstream stream
        send(production, finished["id"], job_of(database, finished["id"], model="bench-400-25"))
        wait_for(lambda: clean_upstream.stats()["disconnects"] == 1,
                 "the upstream call to be closed", timeout=20)
        assert clean_upstream.stats()["completed"] == 0
        assert database.execute("SELECT count(*) FROM accounting_responseusage WHERE response_id = %s",
                                [finished["id"]]).fetchone()[0] == 1
    assert api.get(f"/responses/{finished['id']}").json() == finished
    assert events.xlen(stream_key) == entries
