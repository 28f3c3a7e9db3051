"""The WebSocket text frames daphne_write builds by hand are RFC 6455's: the same bytes as
an independent implementation's (the `websockets` library) unmasked final text frame, at
each of the three length encodings' edges."""
import pytest
from websockets.frames import OP_TEXT, Frame

from responses_app.api.daphne_write import _text_frame


@pytest.mark.parametrize("size", [0, 1, 125, 126, 127, 65535, 65536, 70000])
def test_text_frame_matches_rfc6455(size):
    payload = (b'{"type":"x"}' * (size // 12 + 1))[:size]
    assert _text_frame(payload) == Frame(OP_TEXT, payload).serialize(mask=False)


# In a process of its own: importing daphne.server installs Twisted's reactor.
UNDER_TRACING = """
import asyncio
from functools import partial

import daphne.server
from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware

from responses_app.api.daphne_write import _daphne_target, body_writer

server = daphne.server.Server(application=None, endpoints=["tcp:port=0:interface=127.0.0.1"])
protocol = object()
daphne_send = partial(server.handle_reply, protocol)
seen = []

async def app(scope, receive, send):
    seen.append(send)

async def receive():
    return {"type": "http.disconnect"}

scope = {"type": "http", "http_version": "1.1", "method": "POST", "path": "/v1/responses",
         "raw_path": b"/v1/responses", "query_string": b"", "headers": [], "scheme": "http",
         "server": ("127.0.0.1", 8000), "client": ("127.0.0.1", 5000)}
for spans in (["receive", "send"], []):
    seen.clear()
    asyncio.run(OpenTelemetryMiddleware(app, exclude_spans=spans)(scope, receive, daphne_send))
    wrapped, = seen
    assert wrapped is not daphne_send
    assert _daphne_target(wrapped) == (protocol, server), spans
assert _daphne_target(partial(lambda message: None, protocol)) == (None, None)
print("found")
"""


def test_daphnes_send_is_found_under_the_tracing_middleware():
    """Tracing on (OpenTelemetry's ASGI middleware wraps each connection's `send`), the
    writes still find Daphne's `send` beneath it, so traced deployments keep the
    write-through; a `send` of anything else is not taken for Daphne's."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", UNDER_TRACING], capture_output=True,
                          text=True, timeout=60)
    assert (done.returncode, done.stdout.strip()) == (0, "found"), done.stderr[-2000:]
