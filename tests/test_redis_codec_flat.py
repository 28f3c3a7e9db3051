"""The shared read's decoding of an entry from the XREAD reply's flat field list
(redis_codec.decode_flat) gives exactly what `decode` gives from the fields as a dict, for
every layout an entry can have."""
import orjson
import pytest

from responses_app.bus.redis_codec import decode, decode_flat

EVENTS = [b'{"type":"response.output_text.delta","sequence_number":4,"delta":"a"}',
          b'{"type":"response.output_text.delta","sequence_number":5,"delta":"b"}']
LAYOUTS = [
    ("events", b"1-5", [b"f", b"4", b"d", b"\n".join(EVENTS), b"t", b"1700000000000"]),
    ("events with the end", b"1-5",
     [b"f", b"4", b"d", b"\n".join(EVENTS), b"t", b"1700000000000", b"e", b"1"]),
    ("one event", b"1-4", [b"f", b"4", b"d", EVENTS[0], b"t", b"1"]),
    ("an error before the start", b"0-1",
     [b"x", orjson.dumps({"status": 429, "body": {"error": {}}, "headers": {}}), b"t", b"1"]),
    ("an end marker", b"2-0", [b"f", b"0", b"d", b"", b"t", b"1", b"e", b"1"]),
    ("an end from outside the run", b"2-5",
     [b"f", b"6", b"d", b'{"type":"response.failed","sequence_number":6}', b"t", b"1",
      b"e", b"1"]),
    ("the previous release's SSE blocks", b"1-5",
     [b"f", b"4", b"d", b"".join(b"event: x\ndata: %s\n\n" % e for e in EVENTS), b"t", b"1"]),
    ("fields in another order", b"1-5",
     [b"d", b"\n".join(EVENTS), b"f", b"4", b"t", b"1"]),
]


@pytest.mark.parametrize("entry_id,flat", [layout[1:] for layout in LAYOUTS],
                         ids=[layout[0] for layout in LAYOUTS])
def test_decode_flat_is_decode(entry_id, flat):
    it = iter(flat)
    assert decode_flat(entry_id, flat) == decode(entry_id, dict(zip(it, it)))
