"""vector_stores.keep_alive against a real HTTP server on 127.0.0.1 (http.server in a
thread): the JSON POST and its answer, the connection kept between calls, a kept
connection the server closed sent again on a new one, and the failures as httpx's."""
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from vector_stores.keep_alive import KeepAliveClient


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive
    connections: list = []

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        if body.get("sleep"):
            time.sleep(body["sleep"])
        Handler.connections.append(self.client_address)
        answer = json.dumps({"echo": body, "auth": self.headers["authorization"],
                             "type": self.headers["content-type"]}).encode()
        self.send_response(201)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(answer)))
        if body.get("close"):
            self.send_header("connection", "close")
        self.end_headers()
        self.wfile.write(answer)
        if body.get("drop"):  # answered, then the server closes the kept connection
            self.close_connection = True

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    Handler.connections = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def test_a_json_post_and_its_answer_on_one_kept_connection(server):
    client = KeepAliveClient(5.0, 5.0)
    for n in range(3):
        reply = client.post(f"{server}/embeddings", json={"n": n},
                            headers={"authorization": "Bearer k"})
        assert isinstance(reply, httpx.Response) and reply.status_code == 201
        assert reply.json() == {"echo": {"n": n}, "auth": "Bearer k",
                                "type": "application/json"}
    assert len(set(Handler.connections)) == 1


def test_a_kept_connection_the_server_closed_is_sent_again_on_a_new_one(server):
    client = KeepAliveClient(5.0, 5.0)
    assert client.post(f"{server}/e", json={"drop": True}, headers={}).status_code == 201
    time.sleep(0.2)  # the server has closed it
    assert client.post(f"{server}/e", json={"n": 2}, headers={}).json()["echo"] == {"n": 2}
    assert client.post(f"{server}/e", json={"close": True}, headers={}).status_code == 201
    assert client.post(f"{server}/e", json={"n": 4}, headers={}).json()["echo"] == {"n": 4}
    assert len(set(Handler.connections)) == 3


def test_failures_are_httpxs(server):
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    with pytest.raises(httpx.ConnectError):
        KeepAliveClient(5.0, 5.0).post(f"http://127.0.0.1:{port}/e", json={}, headers={})
    with pytest.raises(httpx.ReadTimeout):
        KeepAliveClient(5.0, 0.2).post(f"{server}/e", json={"sleep": 1.0}, headers={})
