"""At-least-once run delivery on the real stack: a worker SIGKILLed after it took a run's
message from the queue and before it claimed the response loses nothing. Its processing
list still holds the message; the watchdog gives it back once the worker's heartbeat has
expired, another worker runs it, the client's stream goes on normally, and the upstream
sees exactly one request (responses_app/delivery/redelivery.py).

The worker is stopped at the exact point by `RUN_QUEUE_STOP_BEFORE_CLAIM=1` (it then waits
forever holding the message), which the test observes through Redis before the kill.
"""
import signal
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import redis

from tests.conftest import production_deployment
from tests.invariants import check_stream
from tests.servers import SPARE_REDIS_DB
from tests.test_e2e_durable import EventReader, bench_text, client, requests_for, wait_for


@pytest.fixture(scope="module")
def delivery(upstream, tmp_path_factory):
    """A deployment with a fast watchdog (2 s heartbeats, a round every 0.5 s)."""
    with production_deployment(upstream, tmp_path_factory, "delivery", SPARE_REDIS_DB,
                               WORKER_HEARTBEAT_TTL_SECONDS="2",
                               WATCHDOG_INTERVAL_SECONDS="0.5") as deployment:
        deployment.key = deployment.new_api_key("dana")
        deployment.redis = redis.Redis.from_url(deployment.env["REDIS_URL"])
        yield deployment


def processing_lists(deployment) -> dict[str, int]:
    """Each processing list in Redis and its length."""
    return {key.decode(): deployment.redis.llen(key)
            for key in deployment.redis.scan_iter(match="gw:processing:*")}


def live_workers(deployment) -> set[str]:
    return {key.decode().removeprefix("gw:worker:")
            for key in deployment.redis.scan_iter(match="gw:worker:*")}


def bounded(reader: EventReader, seconds: float = 45.0) -> EventReader:
    """`reader`, failing if its stream has not ended within `seconds` rather than waiting
    forever (keep-alives arrive every second, so the check runs at least that often)."""
    lines, deadline = reader.lines, time.monotonic() + seconds

    def checked():
        for line in lines:
            if time.monotonic() > deadline:
                raise AssertionError(f"the stream did not end within {seconds} s")
            yield line

    reader.lines = checked()
    return reader


def stream_to_end(deployment, body: dict) -> tuple[list[dict], bool]:
    with client(deployment, deployment.key) as http, \
            http.stream("POST", "/responses", json=body) as stream:
        reader = bounded(EventReader(stream))
        return reader.read_to_end(), reader.done


def start_stopping_worker(deployment) -> None:
    """Replace the worker by one that stops for good after taking a message."""
    deployment.stop_worker()
    deployment.env["RUN_QUEUE_STOP_BEFORE_CLAIM"] = "1"
    try:
        deployment.start_worker()
    finally:
        del deployment.env["RUN_QUEUE_STOP_BEFORE_CLAIM"]


@pytest.mark.parametrize("background", [False, True], ids=["carried-job", "id-only"])
def test_a_worker_killed_between_pop_and_claim_loses_nothing(delivery, clean_upstream,
                                                             background):
    marker = f"lost pop {background}"
    start_stopping_worker(delivery)
    stopping = delivery.worker
    wait_for(lambda: len(live_workers(delivery)) == 1, "the stopping worker's heartbeat")
    with ThreadPoolExecutor(1) as pool:
        streamed = pool.submit(stream_to_end, delivery, {
            "model": "bench-30-10", "input": marker, "stream": True, "background": background})
        held = wait_for(lambda: [key for key, length in processing_lists(delivery).items()
                                 if length == 1], "the worker to take the run")
        assert delivery.redis.llen("gw:runs") == 0
        stopping.send_signal(signal.SIGKILL)
        stopping.wait()
        delivery.start_worker()
        events, done = streamed.result(timeout=60)
    assert done
    final = check_stream(events)
    assert [e["type"] for e in events][-1] == "response.completed"
    assert final["output"][0]["content"][0]["text"] == bench_text(30)
    assert requests_for(clean_upstream, marker) == 1  # run once, by the second worker
    # the dead worker's list was given back whole; it stays a known consumer for a while
    assert delivery.redis.llen(held[0]) == 0
    assert delivery.redis.llen("gw:runs") == 0
    consumers = {m.decode() for m in delivery.redis.zrange("gw:consumers", 0, -1)}
    assert held[0].removeprefix("gw:processing:") in consumers
    assert live_workers(delivery) < consumers


def test_a_settled_claim_leaves_no_message_behind(delivery, clean_upstream):
    events, done = stream_to_end(delivery, {"model": "bench-5-0", "input": "acked",
                                            "stream": True})
    assert done and events[-1]["type"] == "response.completed"
    wait_for(lambda: set(processing_lists(delivery).values()) <= {0},
             "the message to leave the processing list")
    assert delivery.redis.llen("gw:runs") == 0
    assert requests_for(clean_upstream, "acked") == 1
