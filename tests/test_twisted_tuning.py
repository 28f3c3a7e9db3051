"""Daphne's transport sends a write at once only when nothing is queued ahead of it, and
queues what the socket does not take (gateway.twisted_tuning); every end-to-end test
streams through the patched transport as well."""
import socket

import pytest

from gateway.twisted_tuning import _send_now


class Transport:
    """The state of a Twisted TCP transport that `_send_now` reads."""

    def __init__(self, sock):
        self.socket = sock
        self.TLS = False
        self.connected = True
        self.disconnecting = False
        self._writeDisconnected = False
        self._tempDataBuffer = []
        self.dataBuffer = b""
        self.offset = 0


@pytest.fixture
def pair():
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    theirs.setblocking(False)
    yield ours, theirs
    ours.close()
    theirs.close()


def test_a_write_with_nothing_queued_goes_out_at_once(pair):
    ours, theirs = pair
    assert _send_now(Transport(ours), b"event: x\n\n") == b""
    assert theirs.recv(100) == b"event: x\n\n"


@pytest.mark.parametrize("state", [
    {"TLS": True}, {"connected": False}, {"disconnecting": True},
    {"_writeDisconnected": True}, {"_tempDataBuffer": [b"queued"]},
    {"dataBuffer": b"partly sent", "offset": 4},
])
def test_a_write_behind_queued_data_or_on_a_special_connection_is_left_to_twisted(pair, state):
    ours, theirs = pair
    transport = Transport(ours)
    for name, value in state.items():
        setattr(transport, name, value)
    assert _send_now(transport, b"data") == b"data"
    with pytest.raises(BlockingIOError):
        theirs.recv(100)


def test_what_a_full_socket_does_not_take_is_returned_to_be_queued(pair):
    ours, theirs = pair
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    data = bytes(range(256)) * 4096  # 1 MiB: more than the socket buffers hold
    rest = _send_now(Transport(ours), data)
    assert 0 < len(rest) < len(data)
    assert _send_now(Transport(ours), b"more") == b"more"  # the socket is full
    received = b""
    while True:
        try:
            received += theirs.recv(1 << 20)
        except BlockingIOError:
            break
    assert received + rest == data
