"""Redis restarted under a running deployment (a Redis server of the test's own, on a free
port): the run in flight fails explicitly, its client's stream ends, stored responses are
untouched, and new requests work again once Redis is back — without restarting anything."""
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
            assert failed["error"]["code"] == "server_error"
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
