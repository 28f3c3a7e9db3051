"""State survives restarts: create a response, restart web and worker, continue the chain;
a chat stream cut by a web restart is stored by its run."""
import json
import time

import httpx
import pytest

from tests.conftest import production_deployment
from tests.servers import RESTART_REDIS_DB


@pytest.fixture(scope="module")
def restarting(upstream, tmp_path_factory):
    """A deployment of this module's own, which its tests stop and start."""
    with production_deployment(upstream, tmp_path_factory, "restart",
                               RESTART_REDIS_DB) as deployment:
        yield deployment, deployment.new_api_key("carol")


def test_a_chain_continues_across_a_restart_of_web_and_worker(upstream, restarting):
    deployment, key = restarting

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


def test_a_chat_stream_cut_by_a_web_restart_is_stored_by_its_run(restarting):
    """Chat Completions has no resume cursor: the client loses its connection when the web
    process stops; the run (the worker's) goes on, and a stored completion has it all."""
    deployment, key = restarting
    lines = []
    with httpx.Client(base_url=deployment.base_url, timeout=30,
                      headers={"Authorization": f"Bearer {key}"}) as client:
        with client.stream("POST", "/chat/completions", json={
                "model": "bench-100-20", "stream": True, "store": True,
                "messages": [{"role": "user", "content": "hi"}]}) as response:
            try:
                for line in response.iter_lines():
                    lines.append(line)
                    if len(lines) == 10:
                        deployment.stop_web()
            except httpx.HTTPError as exc:
                lines.append(type(exc).__name__)
    assert "data: [DONE]" not in lines
    assert lines[-1] == "RemoteProtocolError"  # cut mid-body: what the openai SDK raises
    completion_id = json.loads(lines[0][6:])["id"]
    deployment.start_web()
    with deployment.client(key) as client:
        deadline = time.monotonic() + 20
        stored = client.get(f"/chat/completions/{completion_id}")
        while stored.status_code == 404 and time.monotonic() < deadline:
            time.sleep(0.2)
            stored = client.get(f"/chat/completions/{completion_id}")
    assert stored.status_code == 200
    assert stored.json()["choices"][0]["message"]["content"] == "".join(
        f"w{i} " for i in range(100))
