"""A synchronous write of a streamed response's body to its connection, under Daphne.

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
"""
import sys
from functools import partial


def body_writer(send):
    """A synchronous `write(body bytes)` on the connection `send` answers on, if the server
    is Daphne; else None."""
    daphne = sys.modules.get("daphne.server")  # imported by Daphne alone (it installs a reactor)
    if (daphne is None or not isinstance(send, partial) or len(send.args) != 1
            or not isinstance(getattr(send.func, "__self__", None), daphne.Server)
            or send.func.__name__ != "handle_reply"):
        return None
    from twisted.internet import tcp

    request = send.args[0]  # Daphne's WebRequest: a twisted.web.http.Request
    handle_reply = request.handle_reply
    transport = getattr(request.channel, "transport", None)
    direct = isinstance(transport, tcp.Connection)  # plain TCP (TLS is checked per write)

    def write(body: bytes) -> None:
        if not (direct and _sent_now(request, body)):
            handle_reply({"type": "http.response.body", "body": body, "more_body": True})

    return write


def _sent_now(request, body: bytes) -> bool:
    """Whether `body` went out as the next chunk of `request`'s chunked response, straight to
    its TCP socket (the rest, if the kernel took part of it, to the transport's buffer)."""
    channel = request.channel
    if (channel is None or request.finished or request._disconnected
            or not request.startedWriting or not request.chunked):
        return False
    transport = channel.transport
    if (transport.TLS or not transport.connected or transport.disconnecting
            or transport._writeDisconnected or transport._tempDataBuffer
            or len(transport.dataBuffer) > transport.offset):
        return False
    chunk = b"%x\r\n%s\r\n" % (len(body), body)
    try:
        sent = transport.socket.send(chunk)
    except BlockingIOError:
        sent = 0
    except OSError:  # Twisted's write finds the connection lost, and says so
        return False
    request.sentLength += len(body)
    if sent < len(chunk):
        transport.write(chunk[sent:])
    return True
