"""WebSocket messages and the gateway's body limit (MAX_REQUEST_BODY_BYTES), on Daphne as
gateway/serve.py starts it: under the limit a `response.create` is served however large
(Daphne's own 1 MiB default used to drop the connection); over it, an error frame and the
socket stays usable; past Daphne's cap (twice the limit) a close with code 1009, never a
dropped connection. The limit counts bytes, as HTTP does."""
import json

import pytest
from websockets.exceptions import ConnectionClosed

from gateway.serve import daphne_arguments
from tests.test_e2e_websocket_limits import MAX_BODY, deployment, error, still_usable  # noqa: F401
from tests.upstream_scenarios import SCENARIOS, text_of
from tests.websocket_client import checked_turn, open_socket, read_turn, send

HELLO = text_of(SCENARIOS["fake-text"])
TWO_MIB = 2 * 1024 * 1024


def test_a_2_mib_create_is_served_like_over_http(production, tenant_key, clean_upstream):
    with open_socket(production, tenant_key) as ws:
        _, final = checked_turn(ws, model="fake-text", store=False, input="x" * TWO_MIB)
    assert final["output"][0]["content"][0]["text"] == HELLO
    sent, = clean_upstream.requests()
    assert sent["body"]["messages"] == [{"role": "user", "content": "x" * TWO_MIB}]


def test_the_limit_counts_utf8_bytes(deployment):  # noqa: F811
    with open_socket(deployment, deployment.key) as ws:
        ws.send(json.dumps({"type": "response.create", "model": "fake-text",  # fewer
                            "input": "\u00e9" * (MAX_BODY // 2)}, ensure_ascii=False))  # chars
        assert read_turn(ws) == [error(413, "invalid_request_error", "request_too_large", None,
                                       "The event is larger than this server accepts.")]
        still_usable(ws)


def test_past_daphnes_cap_the_socket_is_closed_with_1009(deployment):  # noqa: F811
    with open_socket(deployment, deployment.key) as ws:
        still_usable(ws)
        send(ws, model="fake-text", input="x" * (2 * MAX_BODY + 1))
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(10)
    assert closed.value.rcvd.code == 1009


def test_daphne_is_given_the_cap_unless_the_command_line_sets_it(monkeypatch):
    cap = str(2 * 16 * 1024 * 1024)
    assert daphne_arguments(["-p", "8000", "gateway.asgi:application"]) == [
        "--websocket-max-message-size", cap, "--websocket-max-frame-size", cap,
        "-p", "8000", "gateway.asgi:application"]
    assert daphne_arguments(["--websocket-max-message-size=5", "app"]) == [
        "--websocket-max-frame-size", cap, "--websocket-max-message-size=5", "app"]
