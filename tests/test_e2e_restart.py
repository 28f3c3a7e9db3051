"""State survives restarts: create a response, restart web and worker, continue the chain."""
import httpx

from tests.conftest import production_deployment
from tests.servers import RESTART_REDIS_DB



def test_a_chain_continues_across_a_restart_of_web_and_worker(upstream, tmp_path_factory):
    with production_deployment(upstream, tmp_path_factory, "restart", RESTART_REDIS_DB) as deployment:
        key = deployment.new_api_key("carol")

        def api():
            return httpx.Client(base_url=deployment.base_url, timeout=30,
                                headers={"Authorization": f"Bearer {key}"})

        with api() as client:
            first = client.post("/responses", json={"model": "fake-echo", "input": "before"}).json()
        assert first["status"] == "completed"
        old_pids = (deployment.web.pid, deployment.worker.pid)
        deployment.restart()
        assert (deployment.web.pid, deployment.worker.pid) != old_pids
        upstream.clear()
        with api() as client:
            second = client.post("/responses", json={"model": "fake-echo", "input": "after",
                                                     "previous_response_id": first["id"]})
            assert second.status_code == 200, second.text
            assert upstream.requests()[-1]["body"]["messages"] == [
                {"role": "user", "content": "before"},
                {"role": "assistant", "content": "user: before"},
                {"role": "user", "content": "after"},
            ]
            assert client.get(f"/responses/{first['id']}").json() == first
