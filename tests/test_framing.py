"""Framing at the edge: the bus's events (the JSON bytes of each object) as SSE blocks and
as WebSocket text frames, by concatenation."""
import orjson

from responses_app.api import framing
from responses_app.translation.numbering import EventStamper
from tests.sse import parse_sse


def test_numbered_events_frame_as_one_sse_block_each():
    events = EventStamper(4).stamp([{"type": "response.output_text.delta", "delta": "a\nb"},
                                    {"type": "response.completed", "response": {"id": "r"}}])
    assert events == [b'{"type":"response.output_text.delta","delta":"a\\nb","sequence_number":4}',
                      b'{"type":"response.completed","response":{"id":"r"},"sequence_number":5}']
    framed = framing.sse(events) + framing.DONE
    assert framed == (
        b'event: response.output_text.delta\n'
        b'data: {"type":"response.output_text.delta","delta":"a\\nb","sequence_number":4}\n\n'
        b'event: response.completed\n'
        b'data: {"type":"response.completed","response":{"id":"r"},"sequence_number":5}\n\n'
        b'data: [DONE]\n\n')
    assert [event["sequence_number"] for event in parse_sse(framed).events] == [4, 5]


def test_an_event_whose_type_is_not_first_is_framed_by_its_type():
    event = orjson.dumps({"sequence_number": 0, "type": "error", "message": "m"})
    assert framing.sse([event]) == b"event: error\ndata: " + event + b"\n\n"


def test_a_websocket_frame_is_the_event_with_the_stream_id_last():
    event = b'{"type":"response.created","sequence_number":0}'
    assert framing.websocket_text(event, None) == event.decode()
    suffix = framing.websocket_suffix('s"1')
    assert orjson.loads(framing.websocket_text(event, suffix)) == {
        "type": "response.created", "sequence_number": 0, "stream_id": 's"1'}
    assert framing.websocket_text(event, suffix) == (
        '{"type":"response.created","sequence_number":0,"stream_id":"s\\"1"}')


def test_an_error_is_one_websocket_error_event_with_its_headers():
    from accounting.ratelimit import RateLimited
    from responses_app.errors import APIError

    error = RateLimited("slow down", headers={"Retry-After": "3"})
    assert orjson.loads(framing.websocket_error(error)) == {
        "type": "error", "status": 429,
        "error": {"message": "slow down", "type": "requests", "param": None,
                  "code": "rate_limit_exceeded", "headers": {"retry-after": "3"}}}
    carried = APIError.of_body(error.status, error.body, error.headers)  # as the bus has it
    assert framing.websocket_error(carried) == framing.websocket_error(error)
