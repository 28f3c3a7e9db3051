"""A recording reverse proxy on 127.0.0.1, put between a client we did not write and the
gateway, so that a test sees exactly what the client sent and what it was answered.

Each request is forwarded to the target as it came (method, path, body, content headers);
the answer is read whole and written back with `Connection: close` (an SSE stream ends
with the gateway's `[DONE]`, so nothing is lost by buffering it). Every exchange is kept as
`Exchange(method, path, body, status, answer)`, bodies as bytes."""
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

FORWARDED = ("content-type", "authorization", "accept", "content-encoding")


@dataclass
class Exchange:
    method: str
    path: str
    body: bytes
    status: int
    answer: bytes


class RecordingProxy:
    """Forwards to `target` (scheme://host:port); `exchanges` in the order they ended."""

    def __init__(self, target: str):
        self.exchanges: list[Exchange] = []
        self._client = httpx.Client(base_url=target, timeout=60)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> "RecordingProxy":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._client.close()

    def _handler(self):
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def _forward(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                headers = {name: self.headers[name] for name in FORWARDED if name in self.headers}
                answer = proxy._client.request(self.command, self.path, content=body,
                                               headers=headers)
                proxy.exchanges.append(Exchange(self.command, self.path, body,
                                                answer.status_code, answer.content))
                self.send_response(answer.status_code)
                self.send_header("content-type", answer.headers.get("content-type", ""))
                self.send_header("content-length", str(len(answer.content)))
                self.send_header("connection", "close")
                self.end_headers()
                self.wfile.write(answer.content)
                self.close_connection = True

            do_GET = do_POST = do_DELETE = _forward

            def log_message(self, *args) -> None:
                pass

        return Handler
