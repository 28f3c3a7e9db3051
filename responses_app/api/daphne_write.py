"""A synchronous write of a streamed response's body (or a WebSocket's text frames) to its
connection, under Daphne.

ASGI gives an application only an async `send`; Daphne's is
`partial(Server.handle_reply, protocol)`, a coroutine that never waits and hands the message
to `protocol.handle_reply`, which writes through Twisted (`Request.write`: the chunk's
framing, the transport's buffer, a write-readiness watch added to the event loop, and on
the next turn `doWrite`'s `send()` and the watch removed again). `body_writer` returns that
write as a plain call, for relay.write_through, or None under any other server (whose `send`
is not known to be synchronous).

When the transport has nothing buffered (the usual case: a paced stream's events are far
apart), the chunk goes to the socket at once (`socket.send`), and only what the kernel did
not take is left to Twisted's buffer: one system call per write instead of a readiness watch
added and removed around it and a callback through Twisted's logging context. Anything
else (TLS, the headers not written yet, a request finished or gone, data buffered, a send
that fails) takes Twisted's own path, which reports a lost connection as it always does.
Measured: in the web's profile at 50 ms pacing, Twisted's write-readiness callback was
15.1% of its CPU (11.3% of it the `send()`); with this, the writes are ~18%, nearly all the
`send()` (docs/architecture.md's ledger, "SSE write-through", 2026-11-27).

A WebSocket's `send` ends the same way: Daphne's `handle_reply` coroutine (which never
waits) hands `websocket.send` to its protocol, which encodes the text and has autobahn
frame it (`sendMessage`) and write it through Twisted. `frame_writer` returns that as a
plain call taking the frame's UTF-8 payload (no str round trip); when the message is an
unmasked, uncompressed, unfragmented text frame of an open socket (Daphne's settings) and
the transport has nothing buffered, the frame is built here (RFC 6455 5.2: 0x81, the
length) and sent at once, as a body chunk is; otherwise autobahn's `sendMessage` does it.
"""
import struct
import sys
from functools import partial


def _daphne_target(send):
    """The protocol Daphne's `send` answers on, and its server; (None, None) elsewhere."""
    daphne = sys.modules.get("daphne.server")  # imported by Daphne alone (it installs a reactor)
    send = _unwrapped(send)
    if (daphne is None or not isinstance(send, partial) or len(send.args) != 1
            or not isinstance(getattr(send.func, "__self__", None), daphne.Server)
            or send.func.__name__ != "handle_reply"):
        return None, None
    return send.args[0], send.func.__self__


def body_writer(send):
    """A synchronous `write(body bytes)` on the connection `send` answers on, if the server
    is Daphne; else None."""
    request, _ = _daphne_target(send)
    if request is None:
        return None
    from twisted.internet import tcp

    # Daphne's WebRequest: a twisted.web.http.Request
    handle_reply = request.handle_reply
    transport = getattr(request.channel, "transport", None)
    direct = isinstance(transport, tcp.Connection)  # plain TCP (TLS is checked per write)

    def write(body: bytes) -> None:
        if not (direct and _sent_now(request, body)):
            handle_reply({"type": "http.response.body", "body": body, "more_body": True})

    return write


def frame_writer(send):
    """A synchronous `write(payloads) -> bool` of text frames (each one frame's UTF-8
    payload, in order) on the WebSocket `send` answers on, if the server is Daphne; else
    None. The write does what Daphne's `send` of `{"type": "websocket.send", "text": ...}`
    does for each and returns True, or returns False without writing when the socket is
    not open (closing, closed or gone: the caller's own `send` then meets that as it
    always did). Frames built here go out in one `send()`."""
    protocol, server = _daphne_target(send)
    if protocol is None or not hasattr(protocol, "sendMessage"):
        return None
    from autobahn.websocket.protocol import WebSocketProtocol
    from twisted.internet import tcp

    connections, open_state = server.connections, WebSocketProtocol.STATE_OPEN

    def write(payloads: list[bytes]) -> bool:
        details = connections.get(protocol)
        if details is None or details.get("disconnected") or protocol.state != open_state:
            return False
        if not (isinstance(protocol.transport, tcp.Connection)
                and all(_plain_text_frame(protocol, len(payload)) for payload in payloads)
                and _to_socket(protocol.transport,
                               b"".join([_text_frame(payload) for payload in payloads]))):
            for payload in payloads:
                protocol.sendMessage(payload, False)
        return True

    return write


def _unwrapped(send):
    """Daphne's `send` under OpenTelemetry's ASGI middleware (tracing on: its `otel_send`,
    made with functools.wraps). With its message spans left out (observability/tracing.py's
    `exclude_spans`), that wrapper does nothing with a body chunk that is not the last, nor
    with a WebSocket text frame but set the connection span's status to 200 again (the
    first frames, and the handshake, still go through it): writing those past it, tracing on
    keeps the write-through. Any other wrapper is kept (its `send` is not known)."""
    inner = getattr(send, "__wrapped__", None)
    code = getattr(send, "__code__", None)  # the wrapper's own (wraps copies the names)
    if (inner is not None and code is not None and code.co_name == "otel_send"
            and "opentelemetry" in code.co_filename):
        return inner
    return send


def _plain_text_frame(protocol, size: int) -> bool:
    """Whether autobahn would send this message as one unmasked, uncompressed frame,
    nothing logged or queued before it."""
    return (protocol._perMessageCompress is None and not protocol.maskServerFrames
            and not (0 < protocol.autoFragmentSize < size)
            and not (0 < protocol.maxMessagePayloadSize < size)
            and not protocol.send_queue and not protocol.logFrames
            and not protocol.logOctets and not protocol.trackedTimings)


def _text_frame(payload: bytes) -> bytes:
    """A final, unmasked text frame (RFC 6455 5.2) carrying `payload`."""
    size = len(payload)
    if size < 126:
        return b"\x81%c%s" % (size, payload)
    if size < 65536:
        return b"\x81\x7e" + struct.pack("!H", size) + payload
    return b"\x81\x7f" + struct.pack("!Q", size) + payload


def _sent_now(request, body: bytes) -> bool:
    """Whether `body` went out as the next chunk of `request`'s chunked response, straight to
    its TCP socket (the rest, if the kernel took part of it, to the transport's buffer)."""
    channel = request.channel
    if (channel is None or request.finished or request._disconnected
            or not request.startedWriting or not request.chunked):
        return False
    if not _to_socket(channel.transport, b"%x\r\n%s\r\n" % (len(body), body)):
        return False
    request.sentLength += len(body)
    return True


def _to_socket(transport, data: bytes) -> bool:
    """Whether `data` went straight to the TCP `transport`'s socket, the transport having
    nothing buffered (the rest, if the kernel took part of it, to its buffer)."""
    if (transport.TLS or not transport.connected or transport.disconnecting
            or transport._writeDisconnected or transport._tempDataBuffer
            or len(transport.dataBuffer) > transport.offset):
        return False
    try:
        sent = transport.socket.send(data)
    except BlockingIOError:
        sent = 0
    except OSError:  # Twisted's write finds the connection lost, and says so
        return False
    if sent < len(data):
        transport.write(data[sent:])
    return True
