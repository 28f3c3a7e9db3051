"""Two adjustments to Twisted, the HTTP server under Daphne, for the streaming path.

Both keep Twisted's behaviour and only skip work; each checks that the Twisted it patches
has what it relies on, and otherwise leaves Twisted as it is.

* Writes go out at once. Twisted queues every write and sends it on the reactor's next
  writable event: an epoll registration, a loop iteration and an unregistration per
  write. The relay writes once per bus entry of every stream it serves, so that was a
  large share of the web's CPU. Now a plain TCP write that nothing is queued ahead of is
  sent at once, as asyncio's transports do; what the socket does not take, and every
  other write (TLS, a connection closing, data already queued), goes Twisted's way.
* A POST's Content-Type is parsed once per distinct value. Twisted parses it with the
  email package (~90 µs) only to see whether the body is a form.
"""
import logging
from functools import lru_cache

log = logging.getLogger(__name__)


def install() -> None:
    _send_writes_at_once()
    _remember_parsed_content_types()


def _send_writes_at_once() -> None:
    from twisted.internet import abstract, tcp

    connection = tcp.Connection
    if getattr(connection, "_writes_sent_at_once", False):
        return
    queue_write = getattr(connection, "write", None)  # TLS-aware, then Twisted's queue
    if not (queue_write and hasattr(abstract.FileDescriptor, "dataBuffer")
            and hasattr(abstract.FileDescriptor, "offset")
            and hasattr(connection, "TLS")):
        log.warning("this Twisted's TCP transport is not the one expected; its writes "
                    "stay queued")
        return

    def write(self, data: bytes) -> None:
        rest = _send_now(self, data)
        if rest:
            queue_write(self, rest)

    def writeSequence(self, iovec) -> None:
        data = b"".join(iovec)
        rest = _send_now(self, data)
        if rest:
            queue_write(self, rest)

    connection.write = write
    connection.writeSequence = writeSequence
    connection._writes_sent_at_once = True


def _send_now(transport, data: bytes) -> bytes:
    """Send what the socket takes now if nothing is queued; what is left to queue."""
    if (transport.TLS or not data or not transport.connected or transport.disconnecting
            or transport._writeDisconnected or transport._tempDataBuffer
            or len(transport.dataBuffer) != transport.offset):
        return data
    try:
        sent = transport.socket.send(data)
    except (BlockingIOError, InterruptedError):
        return data
    except OSError:
        return data  # Twisted's own write path meets the failure and closes
    return data[sent:]


def _remember_parsed_content_types() -> None:
    from twisted.web import http

    parse = getattr(http, "_parseContentType", None)
    if parse is not None and not hasattr(parse, "cache_info"):
        http._parseContentType = lru_cache(maxsize=256)(parse)
