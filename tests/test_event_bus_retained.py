"""Reading a response's whole event log back (the admin's event view), on real Redis and on
the in-process bus: entries in order with the time they were stored, and the time left."""
import os

import pytest
import redis

from responses_app.bus.redis import stream_key
from responses_app.translation.numbering import EventStamper
from tests.test_event_bus import BUSES, batch, numbers, redis_bus, run


@pytest.mark.parametrize("make_bus", BUSES)
def test_the_whole_log_comes_back_in_order_with_write_times(make_bus):
    bus = make_bus()
    response_id = f"resp_retained_{os.getpid()}"

    async def scenario():
        writer = bus.writer(response_id)
        stamper = EventStamper()
        await writer.append(batch(stamper, 2), urgent=True)
        await writer.append(batch(stamper, 3), urgent=True)
        running = bus.read_retained(response_id)
        await writer.append(batch(stamper, 1, end=True))
        return running, bus.read_retained(response_id)

    running, ended = run(scenario(), bus)
    assert numbers(running.entries) == [0, 1, 2, 3, 4]
    assert numbers(ended.entries) == [0, 1, 2, 3, 4, 5]
    assert [entry.end for entry in ended.entries] == [False, False, True]
    times = [entry.at for entry in ended.entries]
    assert all(isinstance(at, float) for at in times)
    assert times == sorted(times)
    assert 0 < ended.expires_in <= 60


@pytest.mark.parametrize("make_bus", BUSES)
def test_an_unknown_response_has_no_log(make_bus):
    assert make_bus().read_retained("resp_never_written") is None


def test_an_entry_written_without_a_time_reads_back_without_one():
    bus = redis_bus()
    redis.Redis.from_url(bus.url).xadd(stream_key("resp_old"), {"f": 0, "e": 1,
                                                                 "d": b"event: x\ndata: {}\n\n"},
                                       id="1-0")
    [entry] = bus.read_retained("resp_old").entries
    assert (entry.first, entry.last, entry.end, entry.at) == (0, 0, True, None)


def test_an_entry_framed_by_the_previous_release_reads_back_as_events():
    """Until its retained entries expire, a stream written as SSE blocks reads back as the
    JSON objects of its events."""
    bus = redis_bus()
    redis.Redis.from_url(bus.url).xadd(stream_key("resp_framed"), {
        "f": 0, "e": 1, "t": 1,
        "d": b'event: a\ndata: {"type":"a","sequence_number":0}\n\n'
             b'event: b\ndata: {"type":"b","sequence_number":1}\n\n'}, id="1-1")
    [entry] = bus.read_retained("resp_framed").entries
    assert entry.events == [b'{"type":"a","sequence_number":0}',
                            b'{"type":"b","sequence_number":1}']
