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
