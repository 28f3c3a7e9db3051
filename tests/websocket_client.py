"""A small WebSocket-mode client for the tests (the `websockets` library): send
`response.create` frames, read one response's frames, check them with the shared oracles."""
import json
from contextlib import contextmanager

from websockets.sync.client import connect

from tests.invariants import check_stream
from tests.oracles import validate_event

TERMINAL = {"response.completed", "response.incomplete", "response.failed"}


def socket_url(deployment) -> str:
    return deployment.base_url.replace("http://", "ws://", 1).rstrip("/") + "/responses"


@contextmanager
def open_socket(deployment, key: str | None):
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    with connect(socket_url(deployment), additional_headers=headers, max_size=None,
                 open_timeout=10, close_timeout=5) as ws:
        yield ws


def send(ws, **frame) -> None:
    ws.send(json.dumps({"type": "response.create", **frame}))


def read_turn(ws, timeout: float = 30) -> list[dict]:
    """The frames of one response: its events up to the terminal one, or one error frame."""
    frames = []
    while True:
        frame = json.loads(ws.recv(timeout))
        frames.append(frame)
        if frame["type"] in TERMINAL or frame["type"] == "error":
            return frames


def checked_turn(ws, **frame) -> tuple[list[dict], dict]:
    """Create a response and check its events: (events, final response)."""
    send(ws, **frame)
    events = read_turn(ws)
    for event in events:
        validate_event(event)
    return events, check_stream(events)


def error_turn(ws, **frame) -> dict:
    """Create a response that must be refused: its one error frame."""
    send(ws, **frame)
    frames = read_turn(ws)
    assert [f["type"] for f in frames] == ["error"], frames
    return frames[0]
