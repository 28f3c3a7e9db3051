"""Redis restarted under a running deployment (a Redis server of the test's own, on a free
port): the run in flight fails explicitly, its client's stream ends, stored responses are
untouched, and new requests work again once Redis is back — without restarting anything.
The run in flight crashes (its event stream's writes fail): it is charged its upstream call,
cut before it reported usage, as a cut call is counted (context.cut_usage)."""
import json
import time

import httpx
import psycopg
import pytest

from tests.conftest import production_deployment
from tests.servers import RedisServer
from tests.test_e2e_durable import EventReader, deltas, wait_for, wait_status


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory):
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    yield server
    if server.process.poll() is None:
        server.kill()


def cut_usage(upstream, marker: str, response: dict) -> dict:
    """The usage of the response's one upstream call (the request holding `marker`) cut
    before it reported any, as the run counts it: the route's estimate (UTF-8 bytes / 4,
    rounded up) of the request as rendered and of the text the response holds."""
    from upstreams.token_counting import render_chat

    [sent] = [r["body"] for r in upstream.requests() if marker in str(r["body"])]
    prompt = -(-len(render_chat(sent).encode()) // 4)
    text = "".join(part["text"] for item in response["output"] for part in item["content"])
    completion = -(-len(text.encode()) // 4)
    return {"input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": completion, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt + completion}


def test_a_redis_restart_fails_the_run_in_flight_and_the_service_recovers(
        upstream, tmp_path_factory, redis_server):
    with production_deployment(upstream, tmp_path_factory, "redisrestart", 0,
                               redis_base_url=redis_server.base_url) as deployment:
        key = deployment.new_api_key("rita")
        with httpx.Client(base_url=deployment.base_url, timeout=30,
                          headers={"Authorization": f"Bearer {key}"}) as api:
            kept = api.post("/responses", json={"model": "fake-text", "input": "kept"}).json()
            assert kept["status"] == "completed"
            with api.stream("POST", "/responses", json={
                    "model": "bench-400-25", "input": "in flight", "stream": True}) as stream:
                reader = EventReader(stream)
                reader.read_until(lambda e: len(deltas(reader.events)) >= 5)
                redis_server.kill()
                reader.read_to_end()
            assert not reader.done  # the stream ended without [DONE]: the client knows
            in_flight = reader.events[0]["response"]["id"]
            failed = wait_status(api, in_flight, {"failed", "completed"})
            assert failed["status"] == "failed"
            assert failed["error"] == {
                "code": "server_error",
                "message": "The server had an error while processing your request."}
            assert failed["usage"] == cut_usage(upstream, "in flight", failed)
            assert api.get(f"/responses/{kept['id']}").json() == kept
            refused = api.post("/responses", json={"model": "fake-text", "input": "while down"})
            assert refused.status_code == 503
            assert refused.json()["error"]["code"] == "service_unavailable"
            with psycopg.connect(deployment.env["DATABASE_URL"]) as database:
                # its run could not be sent: its row is gone too, nothing runs it later
                assert database.execute("SELECT status FROM responses ORDER BY created_at"
                                        ).fetchall() == [("completed",), ("failed",)]

            redis_server.start()
            time.sleep(0.5)

            def works():
                answer = api.post("/responses", json={"model": "fake-text", "input": "back"})
                return answer.status_code == 200 and answer.json()["status"] == "completed"

            wait_for(works, "new requests to work again", timeout=60, every=0.5)
            with api.stream("POST", "/responses", json={"model": "fake-text", "input": "again",
                                                        "stream": True}) as stream:
                assert EventReader(stream).read_to_end()[-1]["type"] == "response.completed"



def test_a_chat_run_crashed_by_redis_going_away_is_charged_its_cut_call(
        upstream, tmp_path_factory, redis_server):
    """A chat completion streaming when Redis goes away crashes (its event stream's writes
    fail): its usage row is committed all the same, `failed`, with its upstream call, cut
    before it reported usage, counted as a cut call is: the route's estimate of the request
    as rendered, and of the text generated (`w0 w1 … ` up to the chunk whose write failed,
    which the run fed before it knew: at least the 5 its client got). Before, a crashed
    chat run was charged nothing."""
    from upstreams.token_counting import render_chat

    with production_deployment(upstream, tmp_path_factory, "redischatcrash", 1,
                               redis_base_url=redis_server.base_url) as deployment:
        key = deployment.new_api_key("carl")
        try:
            with httpx.Client(base_url=deployment.base_url, timeout=30,
                              headers={"Authorization": f"Bearer {key}"}) as api:
                with api.stream("POST", "/chat/completions", json={
                        "model": "bench-400-25", "stream": True,
                        "messages": [{"role": "user", "content": "chat in flight"}]}) as stream:
                    chunks, lines = [], stream.iter_lines()
                    for line in lines:
                        if line.startswith("data: "):
                            chunks.append(json.loads(line[6:]))
                        if len(chunks) == 5:
                            break
                    redis_server.kill()
                    list(lines)

            def usage_rows():
                with psycopg.connect(deployment.env["DATABASE_URL"]) as database:
                    return database.execute(
                        "SELECT status, input_tokens, output_tokens"
                        " FROM accounting_responseusage WHERE response_id = %s",
                        (chunks[0]["id"],)).fetchall()

            wait_for(usage_rows, "the crashed run's usage row")
            [(status, input_tokens, output_tokens)] = usage_rows()
        finally:
            if redis_server.process.poll() is not None:
                redis_server.start()
    [sent] = [r["body"] for r in upstream.requests() if "chat in flight" in str(r["body"])]
    assert [chunk["choices"][0]["delta"]["content"] for chunk in chunks] == [
        f"w{i} " for i in range(5)]
    assert (status, input_tokens) == ("failed", -(-len(render_chat(sent).encode()) // 4))
    assert output_tokens in {-(-len("".join(f"w{i} " for i in range(n)).encode()) // 4)
                             for n in range(5, 401)}
