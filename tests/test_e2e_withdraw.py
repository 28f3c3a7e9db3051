"""A run no worker started in time is taken back, on the real stack: its client's 503
says it will not run, its message leaves the run queue, the row the web wrote for it is
removed and its tenant's run slot is free again; a worker started afterwards never runs
it (the upstream sees only the request made after the worker came). One a worker took
before the take-back is waited for once more as long, and relayed in full; only if it
does not start within that either is its client answered 503 (it may still complete).

The web gives up waiting for a run's first event after UPSTREAM_TIMEOUT +
UPSTREAM_CONNECT_TIMEOUT (3 s here). A worker that has a run but publishes nothing yet,
at the test's command: a response's claim (the row its run writes) waits for a lock on
the responses table the test holds; a chat completion's upstream holds its first chunk
(`bench-…-held0-…`, keep-alive comments meanwhile) until the test releases it."""
import json
import re
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import orjson
import psycopg
import pytest
import redis

from tests.conftest import production_deployment
from tests.deployment_setup import provision
from tests.servers import SPARE_REDIS_DB
from tests.sse import parse_sse
from tests.test_e2e_durable import wait_for
from tests.websocket_client import open_socket, read_turn, send

NOT_STARTED = {"type": "server_error", "param": None, "code": "service_unavailable"}


def worker_pids(redis_client) -> set[str]:
    """The process ids of the workers whose heartbeat is in Redis (ids host:pid:random)."""
    return {key.decode().removeprefix("gw:worker:").split(":")[1]
            for key in redis_client.scan_iter(match="gw:worker:*")}


def not_started(what: str) -> dict:
    return {"error": {"message": f"No worker started this {what} in time, and it will not "
                                 "run; retry shortly.", **NOT_STARTED}}


@pytest.fixture(scope="module")
def deployment(upstream, tmp_path_factory):
    """The file's deployment: a 3 s wait for a run's first event; a run's claim waits up
    to 20 s for the database (a claim the test holds up is not abandoned)."""
    with production_deployment(upstream, tmp_path_factory, "withdraw", SPARE_REDIS_DB,
                               UPSTREAM_TIMEOUT="2", UPSTREAM_CONNECT_TIMEOUT="1",
                               DATABASE_WAIT_SECONDS="20") as deployment:
        yield deployment


def stored_ids(deployment) -> list[tuple[str]]:
    with psycopg.connect(deployment.env["DATABASE_URL"]) as database:
        return database.execute("SELECT id FROM responses ORDER BY id").fetchall()


def test_a_run_no_worker_started_in_time_is_taken_back_and_never_runs(upstream, deployment):
    """No worker runs at first: every run is taken back."""
    deployment.stop_worker()
    stored = stored_ids(deployment)  # the other tests' responses, if they ran first
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
        assert stored_ids(deployment) == stored

        deployment.start_worker()  # its run waits 3 s for a worker: once it is up
        wait_for(lambda: str(deployment.worker.pid) in worker_pids(queue),
                 "the new worker's heartbeat")
        after = api.post("/responses", json={"model": "fake-echo", "input": "after"})
    assert (after.status_code, after.json()["status"]) == (200, "completed")
    assert [request["body"]["messages"][-1]["content"] for request in upstream.requests()
            if request["path"] == "/v1/chat/completions"] == ["after"]


# --- a run a worker took before the take-back -------------------------------------------

RESPONSE_EVENTS = [
    "response.created", "response.in_progress", "response.output_item.added",
    "response.content_part.added", "response.output_text.delta", "response.output_text.delta",
    "response.output_text.done", "response.content_part.done", "response.output_item.done",
    "response.completed"]
CHAT_TEXT = "w0 w1 "  # bench-2-0's two chunks
# the web's lines of a late run: its first wait ended, its take-back found it taken, it
# started within the second wait
LATE_LINES = ["no worker started it in time", "could not be taken back: a worker has it",
              "its run started late"]


@contextmanager
def claims_held(deployment):
    """Responses' claims wait (a lock on the table that their INSERT needs) until the
    block's end."""
    with psycopg.connect(deployment.env["DATABASE_URL"]) as database:
        database.execute("LOCK TABLE responses IN SHARE MODE")
        yield
        database.rollback()


def web_lines(deployment, text: str) -> list[str]:
    """The web's log messages of relay.first_entry that hold `text`."""
    lines = [orjson.loads(line) for log in sorted(deployment.workdir.glob("web-*"))
             for line in log.read_text().splitlines() if line.startswith("{")]
    return [line["message"] for line in lines
            if line.get("logger") == "responses_app.api.relay" and text in line["message"]]


def worker_up(deployment) -> None:
    """The worker runs, and its heartbeat is in Redis."""
    if deployment.worker is None:
        deployment.start_worker()
    queue = redis.Redis.from_url(deployment.env["REDIS_URL"])
    wait_for(lambda: str(deployment.worker.pid) in worker_pids(queue),
             "the worker's heartbeat")


def streamed(api, path: str, body: dict) -> tuple[int, bytes]:
    with api.stream("POST", path, json={**body, "stream": True}) as reply:
        return reply.status_code, reply.read()


def socket_turn(deployment, key: str, body: dict) -> list[dict]:
    with open_socket(deployment, key) as ws:
        send(ws, **body)
        return read_turn(ws)


def chat_data(raw: bytes) -> list:
    """A chat completion stream's `data:` payloads (JSON, or "[DONE]"), comments left out."""
    blocks = [block for block in raw.decode().split("\n\n") if block.startswith("data: ")]
    return [block[6:] if block == "data: [DONE]" else json.loads(block[6:]) for block in blocks]


def test_a_run_a_worker_took_before_the_take_back_is_relayed_in_full(upstream, deployment):
    """Five clients, one of each front (a response streamed, waited for, a WebSocket turn;
    a chat completion streamed, waited for): the worker takes each run at once, but
    publishes nothing within the web's 3 s; the take-back finds it taken. Before, each
    client was answered 503 "No worker started this ... in time" while its run went on;
    now each waits once more, and gets the whole answer when its run starts."""
    worker_up(deployment)
    [key] = provision(deployment, {"late": {"keys": 1, "limits": {}}})["late"]
    held = f"bench-2-0-held0-late{time.time_ns()}"
    response = {"model": "bench-2-0", "input": "taken late"}
    chat = {"model": held, "messages": [{"role": "user", "content": "taken late"}]}
    late_lines = [len(web_lines(deployment, text)) for text in LATE_LINES]
    with deployment.client(key) as api, ThreadPoolExecutor(5) as pool:
        with claims_held(deployment):
            calls = [pool.submit(streamed, api, "/responses", response),
                     pool.submit(api.post, "/responses", json=response),
                     pool.submit(socket_turn, deployment, key, response),
                     pool.submit(streamed, api, "/chat/completions", chat),
                     pool.submit(api.post, "/chat/completions", json=chat)]
            wait_for(lambda: len(web_lines(deployment, LATE_LINES[0])) == late_lines[0] + 5,
                     "the five first waits to end (and their take-backs)")
        upstream.release(held)
        (stream_status, stream), plain, frames, (chat_status, chat_stream), chat_plain = [
            call.result() for call in calls]
    assert (stream_status, plain.status_code, frames[0]["type"], chat_status,
            chat_plain.status_code) == (200, 200, "response.created", 200, 200)
    assert [event["type"] for event in parse_sse(stream).events] == RESPONSE_EVENTS
    assert [frame["type"] for frame in frames] == RESPONSE_EVENTS
    assert (plain.status_code, plain.json()["status"],
            plain.json()["output"][0]["content"][0]["text"]) == (200, "completed", CHAT_TEXT)
    chunks = chat_data(chat_stream)
    assert [chunk["choices"][0] if chunk != "[DONE]" else chunk for chunk in chunks] == [
        {"index": 0, "delta": {"role": "assistant", "content": "w0 "}, "logprobs": None,
         "finish_reason": None},
        {"index": 0, "delta": {"content": "w1 "}, "logprobs": None, "finish_reason": None},
        {"index": 0, "delta": {}, "logprobs": None, "finish_reason": "stop"}, "[DONE]"]
    assert chat_plain.json()["choices"][0]["message"]["content"] == CHAT_TEXT
    assert [len(web_lines(deployment, text)) - before
            for text, before in zip(LATE_LINES, late_lines)] == [5, 5, 5]
    assert sent_upstream(upstream, "taken late") == ["bench-2-0"] * 3 + [held] * 2


def sent_upstream(upstream, content: str) -> list[str]:
    """The models of the upstream's chat requests whose last message is `content`, sorted
    (each run generated once: one request)."""
    return sorted(request["body"]["model"] for request in upstream.requests()
                  if request["path"] == "/v1/chat/completions"
                  and request["body"]["messages"][-1]["content"] == content)


def test_a_run_a_worker_took_that_does_not_start_within_the_second_wait_is_a_503(
        upstream, deployment):
    """The same, but nothing comes within the second 3 s either: the client is answered
    503, which says its run may still complete and names it (before: the 503 after the
    first wait, which named nothing). Let go, the run completes, and can be retrieved by
    that id."""
    worker_up(deployment)
    [key] = provision(deployment, {"later": {"keys": 1, "limits": {}}})["later"]
    held = f"bench-2-0-held0-later{time.time_ns()}"
    response = {"model": "bench-2-0", "input": "not started"}
    chat = {"model": held, "store": True,
            "messages": [{"role": "user", "content": "not started"}]}
    with deployment.client(key) as api:
        with claims_held(deployment), ThreadPoolExecutor(2) as pool:
            calls = [pool.submit(streamed, api, "/responses", response),
                     pool.submit(api.post, "/chat/completions", json=chat)]
            (stream_status, stream), chat_reply = [call.result() for call in calls]
        upstream.release(held)
        refusals = [(stream_status, orjson.loads(stream)), (chat_reply.status_code,
                                                            chat_reply.json())]
        ids = [(re.search(r"its id, (\S+),", body["error"]["message"]) or [None, None])[1]
               for _, body in refusals]
        assert refusals == [(503, late("response", ids[0])),
                            (503, late("chat completion", ids[1]))]
        assert chat_reply.headers["retry-after"] == "5"
        stored = wait_for(lambda: (body := api.get(f"/responses/{ids[0]}").json()).get(
            "status") == "completed" and body, "the late response to be stored")
        completion = wait_for(lambda: (reply := api.get(f"/chat/completions/{ids[1]}"))
                              .status_code == 200 and reply.json(),
                              "the late chat completion to be stored")
    assert stored["output"][0]["content"][0]["text"] == CHAT_TEXT
    assert completion["choices"][0]["message"]["content"] == CHAT_TEXT
    assert sent_upstream(upstream, "not started") == ["bench-2-0", held]


def late(what: str, run_id: str) -> dict:
    return {"error": {"message": f"No worker started this {what} in time; a worker has it "
                                 f"now and it may still complete: if it is stored, retrieve "
                                 f"it by its id, {run_id}, rather than retry.", **NOT_STARTED}}
