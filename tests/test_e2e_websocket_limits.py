"""WebSocket mode's edges on the production path: bad frames (an error frame, the socket
stays usable), keys and quotas (an error frame, then close codes 4401 and 4429), the
socket's age and idle limits, and what a closing socket does to its runs.
"""
import contextlib
import json
import time

import psycopg
import pytest
from websockets.exceptions import ConnectionClosed

from tests.conftest import production_deployment
from tests.servers import SPARE_REDIS_DB
from tests.test_e2e_durable import bench_text, wait_for
from tests.upstream_scenarios import SCENARIOS, text_of
from tests.websocket_client import checked_turn, error_turn, open_socket, read_turn, send

HELLO = text_of(SCENARIOS["fake-text"])
IDLE_SECONDS = 2
MAX_AGE_SECONDS = 5
MAX_BODY = 65536


@pytest.fixture(scope="module")
def deployment(upstream, tmp_path_factory):
    with production_deployment(upstream, tmp_path_factory, "websocket", SPARE_REDIS_DB,
                               WEBSOCKET_IDLE_SECONDS=str(IDLE_SECONDS),
                               WEBSOCKET_MAX_AGE_SECONDS=str(MAX_AGE_SECONDS),
                               WEBSOCKET_MAX_QUEUED="1", API_KEY_CACHE_SECONDS="0",
                               MAX_REQUEST_BODY_BYTES=str(MAX_BODY)) as deployment:
        deployment.key = deployment.new_api_key("wendy")
        yield deployment


@pytest.fixture
def ws(deployment):
    with open_socket(deployment, deployment.key) as socket:
        yield socket


def error(status: int, kind: str, code: str, param, message: str) -> dict:
    return {"type": "error", "status": status,
            "error": {"type": kind, "code": code, "param": param, "message": message}}


def still_usable(ws) -> None:
    _, final = checked_turn(ws, model="fake-text", store=False, input="still there?")
    assert final["output"][0]["content"][0]["text"] == HELLO


def test_malformed_json_gets_an_error_frame(ws):
    ws.send('{"type": "response.create", "model": ')
    frame, = read_turn(ws)
    assert (frame["status"], frame["error"]["code"]) == (400, "invalid_json")
    assert frame["error"]["message"].startswith("We could not parse the JSON of your event")
    still_usable(ws)


def test_unknown_event_type(ws):
    ws.send(json.dumps({"type": "session.update"}))
    assert read_turn(ws) == [error(400, "invalid_request_error", "invalid_value", "type",
                                   "Unsupported event type 'session.update': this server "
                                   "accepts 'response.create' and 'response.steer'.")]
    ws.send(json.dumps(["response.create"]))
    assert read_turn(ws) == [error(400, "invalid_request_error", "invalid_type", None,
                                   "An event must be a JSON object.")]
    still_usable(ws)


def test_missing_model(ws):
    frame = error_turn(ws, input="hi")
    assert (frame["status"], frame["error"]["param"]) == (400, "model")
    assert frame["error"]["type"] == "invalid_request_error"
    still_usable(ws)


def test_a_model_name_longer_than_its_columns(ws):
    assert error_turn(ws, model="m" * 201, input="hi") == error(
        400, "invalid_request_error", "string_above_max_length", "model",
        "Invalid 'model': string too long. Expected a string with maximum length 200, but "
        "got a string with length 201 instead.")
    still_usable(ws)


def test_background_is_refused(ws):
    assert error_turn(ws, model="fake-text", background=True, input="hi") == error(
        400, "invalid_request_error", "invalid_value", "background",
        "background is not supported over WebSocket.")
    still_usable(ws)


def test_oversize_frame(ws):
    send(ws, model="fake-text", input="x" * MAX_BODY)
    assert read_turn(ws) == [error(413, "invalid_request_error", "request_too_large", None,
                                   "The event is larger than this server accepts.")]
    still_usable(ws)


@pytest.mark.parametrize("key", ["sk-wrong_key", None])
def test_bad_key_closes_with_4401(deployment, key):
    with open_socket(deployment, key) as ws:
        frame = json.loads(ws.recv(10))
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(10)
    assert (frame["type"], frame["status"], frame["error"]["code"]) == (
        "error", 401, "invalid_api_key")
    assert closed.value.rcvd.code == 4401


def test_revoked_key_closes_with_4401(deployment):
    key = deployment.new_api_key("rex")
    with open_socket(deployment, key) as ws:
        still_usable(ws)
        prefix = key[3:].partition("_")[0]
        with psycopg.connect(deployment.env["DATABASE_URL"], autocommit=True) as db:
            db.execute("UPDATE responses_app_apikey SET revoked_at = now() WHERE prefix = %s",
                       [prefix])
        frame = error_turn(ws, model="fake-text", input="hi")
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(10)
    assert (frame["status"], frame["error"]["code"]) == (401, "invalid_api_key")
    assert closed.value.rcvd.code == 4401


def test_exhausted_quota_closes_with_4429(deployment):
    key = deployment.new_api_key("quincy")
    deployment.manage("set_limits", "quincy", "--monthly-token-budget", "1")
    with open_socket(deployment, key) as ws:
        still_usable(ws)  # the budget is spent by this response's usage
        frame = error_turn(ws, model="fake-text", input="hi")
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(10)
    assert (frame["status"], frame["error"]["type"], frame["error"]["code"]) == (
        429, "insufficient_quota", "insufficient_quota")
    assert closed.value.rcvd.code == 4429


def test_frames_beyond_the_queue_are_refused(ws, deployment, upstream):
    model = f"bench-8-1-held2-queue{time.time_ns()}"
    for text in ("running", "queued", "one too many"):
        send(ws, model=model, store=False, input=text)
    refused = json.loads(ws.recv(10))
    while refused["type"] != "error":  # the running response's first events come first
        refused = json.loads(ws.recv(10))
    assert refused["error"]["code"] == "too_many_queued_requests"
    upstream.release(model)
    first, second = read_turn(ws), read_turn(ws)
    assert first[-1]["type"] == second[-1]["type"] == "response.completed"


def test_idle_socket_is_closed(ws):
    with pytest.raises(ConnectionClosed) as closed:
        ws.recv(IDLE_SECONDS + 5)
    assert closed.value.rcvd.code == 1000


def test_socket_age_limit(ws):
    started = time.monotonic()
    frames = []
    with pytest.raises(ConnectionClosed) as closed:
        while time.monotonic() - started < MAX_AGE_SECONDS + 10:
            with contextlib.suppress(ConnectionClosed):
                send(ws, model="fake-text", store=False, input="keep busy")
            frames += read_turn(ws)  # raises once the frames before the close are read
            time.sleep(0.5)
    assert frames[-1] == error(400, "invalid_request_error", "websocket_connection_limit_reached",
                               None, f"Responses websocket connection limit reached "
                               f"({MAX_AGE_SECONDS} seconds). Create a new websocket "
                               "connection to continue.")
    assert closed.value.rcvd.code == 1000


def test_closing_a_socket_stops_its_store_false_run(deployment, clean_upstream):
    model = f"bench-40-5-held3-gone{time.time_ns()}"
    with open_socket(deployment, deployment.key) as ws:
        send(ws, model=model, store=False, input="hi")
        while json.loads(ws.recv(10))["type"] != "response.output_text.delta":
            pass
    wait_for(lambda: clean_upstream.stats()["disconnects"] == 1, "the upstream to see the close")
    assert clean_upstream.stats()["completed"] == 0


def test_a_store_true_run_outlives_its_socket(deployment, upstream):
    model = f"bench-40-1-held3-kept{time.time_ns()}"
    with open_socket(deployment, deployment.key) as ws:
        send(ws, model=model, input="hi")
        response_id = json.loads(ws.recv(10))["response"]["id"]
    stored = stored_once_released(deployment, upstream, model, response_id)
    assert stored["output"][0]["content"][0]["text"] == bench_text(40)


def stored_once_released(deployment, upstream, model: str, response_id: str) -> dict:
    """Release a held model; the response as stored once its run has completed."""
    upstream.release(model)
    with deployment.client(deployment.key) as api:
        wait_for(lambda: api.get(f"/responses/{response_id}").json()["status"] == "completed",
                 "the run to be stored")
        return api.get(f"/responses/{response_id}").json()


def test_server_shutdown_closes_sockets_and_stops_their_store_false_runs(deployment,
                                                                         clean_upstream):
    """SIGTERM to Daphne: open sockets get a close frame with code 4503 (1001 cannot be
    sent through Daphne: its WebSocket library lets a server send 1000 and 3000-4999 only);
    their store: false runs are stopped, their store: true runs finish and are stored."""
    import signal

    tag = time.time_ns()
    gone, kept = f"bench-40-5-held3-shutdown{tag}", f"bench-40-1-held3-kept{tag}"
    try:
        with open_socket(deployment, deployment.key) as ws:
            send(ws, model=kept, input="kept", stream_id="kept")
            send(ws, model=gone, store=False, input="gone", stream_id="gone")
            started, kept_id = set(), None
            while started != {"kept", "gone"}:
                frame = json.loads(ws.recv(10))
                if frame["type"] == "response.output_text.delta":
                    started.add(frame["stream_id"])
                if frame["type"] == "response.created" and frame["stream_id"] == "kept":
                    kept_id = frame["response"]["id"]
            deployment.web.send_signal(signal.SIGTERM)
            with pytest.raises(ConnectionClosed) as closed:
                while True:
                    ws.recv(20)
        assert closed.value.rcvd is not None, "no close frame"
        assert (closed.value.rcvd.code, closed.value.rcvd.reason) == (4503, "")
        wait_for(lambda: clean_upstream.stats()["disconnects"] == 1,
                 "the upstream to see the store: false run stopped")
        assert deployment.web.wait(15) == 0
    finally:
        deployment.stop_web()
        deployment.start_web()
    stored = stored_once_released(deployment, clean_upstream, kept, kept_id)
    assert stored["output"][0]["content"][0]["text"] == bench_text(40)
    assert clean_upstream.stats()["completed"] == 1  # the kept run only
    with open_socket(deployment, deployment.key) as ws:
        still_usable(ws)
