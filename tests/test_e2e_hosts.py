"""Several hosts on a real network (tests/netns.py, tests/hosts_cluster.py): two web hosts
and two worker hosts serve a load and resume streams on either web host; a worker host cut
off from Redis mid-run has its runs failed over by the watchdog, each generated once, and
once back it publishes and stores nothing for them; a web host cut off from Redis ends
its streams cleanly and they resume on the other web host.

Needs root (network namespaces): skipped without, failed instead under CI=true.
"""
import os
import re
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.hosts_cluster import Cluster, cluster_workdir
from tests.invariants import check_stream
from tests.netns import Network, namespaces_available
from tests.sse import parse_sse
from tests.test_e2e_delivery import bounded
from tests.test_e2e_durable import EventReader, bench_text, deltas, wait_for

WORKER_LOST = {"code": "server_error", "message": (
    "The worker running this response stopped before it finished; the response was not "
    "completed.")}


@pytest.fixture(scope="module")
def cluster():
    why = namespaces_available()
    if why is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)
    with Network(("front", "back")) as network, cluster_workdir("hosts") as workdir:
        yield Cluster(network, workdir).start(dict(os.environ))


def stream(cluster, web, body: dict) -> tuple[list[dict], bool]:
    with cluster.client(web) as http, http.stream("POST", "/responses", json=body) as answer:
        reader = bounded(EventReader(answer))
        return reader.read_to_end(), reader.done


def upstream_count(cluster, marker: str) -> int:
    """Requests the upstream saw for the input `marker`."""
    return sum(1 for request in cluster.upstream_requests()
               if marker in str(request.get("body")))


def rows(cluster, ids: list[str]) -> dict[str, tuple[str, str]]:
    """response id -> (status, worker id)."""
    with cluster.database() as database:
        return {row[0]: (row[1], row[2]) for row in database.execute(
            "SELECT id, status, worker_id FROM responses WHERE id = ANY(%s)", [ids])}


def test_two_web_and_two_worker_hosts_serve_a_load_and_resume_on_either(cluster):
    def one(number: int):
        return stream(cluster, cluster.webs[number % 2], {
            "model": "bench-40-5", "input": f"load #{number}.", "stream": True})

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(one, range(16)))
    for number, (events, done) in enumerate(results):
        assert done
        final = check_stream(events)
        assert final["status"] == "completed"
        assert final["output"][0]["content"][0]["text"] == bench_text(40)
        assert upstream_count(cluster, f"load #{number}.") == 1
    ids = [events[0]["response"]["id"] for events, _ in results]
    ran_on = {cluster.worker_host(worker).name for _, worker in rows(cluster, ids).values()}
    assert ran_on == {"worker1", "worker2"}

    events = results[0][0]  # finished: replayed from after event 5 on either web host
    for web in cluster.webs:
        with cluster.client(web) as http:
            replay = parse_sse(http.get(f"/responses/{ids[0]}",
                                        params={"stream": "true", "starting_after": 5}).content)
        assert replay.events == events[6:]

    first_web, second_web = cluster.webs  # live: resumed on the other web host mid-run
    with cluster.client(first_web) as http, http.stream("POST", "/responses", json={
            "model": "bench-60-40", "input": "live resume", "stream": True}) as answer:
        first = bounded(EventReader(answer))
        first.read_until(lambda e: len(deltas(first.events)) >= 5)
        seen = first.events[-1]["sequence_number"]
        response_id = first.events[0]["response"]["id"]
        with cluster.client(second_web) as other, other.stream(
                "GET", f"/responses/{response_id}",
                params={"stream": "true", "starting_after": seen}) as resumed_answer:
            resumed = bounded(EventReader(resumed_answer)).read_to_end()
        whole = first.read_to_end()
    assert first.events[:seen + 1] + resumed == whole
    assert check_stream(whole)["output"][0]["content"][0]["text"] == bench_text(60)


def test_a_worker_host_cut_off_from_redis_fails_over_and_stays_silent(cluster):
    markers = [f"cut #{number}." for number in range(4)]
    with ThreadPoolExecutor(4) as pool:
        streams = [pool.submit(stream, cluster, cluster.webs[number % 2], {
            "model": "bench-200-50", "input": marker, "stream": True})
            for number, marker in enumerate(markers)]
        wait_for(lambda: all(upstream_count(cluster, marker) == 1 for marker in markers),
                 "every run to call the upstream")
        with cluster.database() as database:
            running = dict(database.execute(
                "SELECT id, worker_id FROM responses WHERE status = 'in_progress'").fetchall())
        assert len(running) == 4
        victim_worker = next(iter(running.values()))
        victim = cluster.worker_host(victim_worker)
        cut_off = [rid for rid, worker in running.items() if worker == victim_worker]
        victim.cut("back")
        try:  # the watchdog fails them after the heartbeat's TTL
            wait_for(lambda: {s for s, _ in rows(cluster, cut_off).values()} == {"failed"},
                     "the watchdog to fail the cut-off worker's runs")
        finally:
            victim.mend("back")
        results = [future.result(timeout=60) for future in streams]

    for events, done in results:
        assert done
        final = check_stream(events)
        if final["id"] in cut_off:
            assert events[-1]["type"] == "response.failed"
            assert final["error"] == WORKER_LOST
            streamed = "".join(e["delta"] for e in deltas(events))
            assert final["output"][0]["content"][0]["text"] == streamed
            assert bench_text(200).startswith(streamed)
        else:
            assert final["output"][0]["content"][0]["text"] == bench_text(200)
    assert [upstream_count(cluster, marker) for marker in markers] == [1, 1, 1, 1]

    # back on the network, the stale worker finds each run given up, and stops
    def stopped(response_id: str) -> bool:
        return bool(re.search(rf"run {response_id} (lost its event stream|ended after it "
                              rf"was given up)", cluster.log(victim)))

    wait_for(lambda: all(stopped(rid) for rid in cut_off), "the stale worker to stop its runs")
    by_id = {events[0]["response"]["id"]: events for events, _ in results}
    with cluster.client(cluster.webs[1]) as http, cluster.database() as database:
        for response_id in cut_off:
            replay = parse_sse(http.get(f"/responses/{response_id}",
                                        params={"stream": "true"}).content)
            assert replay.events == by_id[response_id]  # nothing published after the end
            stored = http.get(f"/responses/{response_id}").json()
            assert stored == by_id[response_id][-1]["response"]  # nothing stored over it
            assert database.execute("SELECT count(*) FROM accounting_responseusage WHERE "
                                    "response_id = %s", [response_id]).fetchone() == (0,)
    wait_for(lambda: len(cluster.live_workers()) == 2, "the stale worker's heartbeat")


def test_a_web_host_cut_off_from_redis_ends_its_streams_cleanly(cluster):
    cut_web, other_web = cluster.webs
    with cluster.client(cut_web) as http, http.stream("POST", "/responses", json={
            "model": "bench-100-50", "input": "web cut", "stream": True}) as answer:
        before = bounded(EventReader(answer))
        before.read_until(lambda e: len(deltas(before.events)) >= 5)
        cut_web.cut("back")
        try:
            before.read_to_end()
        finally:
            cut_web.mend("back")
    assert not before.done  # the stream ended without [DONE]: the client knows to resume
    seen = before.events[-1]["sequence_number"]
    response_id = before.events[0]["response"]["id"]
    with cluster.client(other_web) as other, other.stream(
            "GET", f"/responses/{response_id}",
            params={"stream": "true", "starting_after": seen}) as answer:
        after = bounded(EventReader(answer))
        after.read_to_end()
    assert after.done
    final = check_stream(before.events + after.events)
    assert final["output"][0]["content"][0]["text"] == bench_text(100)
    assert upstream_count(cluster, "web cut") == 1

    def serves_again() -> bool:  # the cut web host recovers by itself
        with cluster.client(cut_web) as again:
            answer = again.post("/responses", json={"model": "fake-text", "input": "back"})
        return answer.status_code == 200 and answer.json()["status"] == "completed"

    wait_for(serves_again, "the web host to serve again", every=0.5)
