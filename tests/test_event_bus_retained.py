"""Reading a response's whole event log back (the admin's event view), on real Redis and on
the in-process bus: entries in order with the time they were stored, and the time left."""
import asyncio
import os

import pytest

from responses_app.bus.redis import decode
from responses_app.translation.sse import EventStamper
from tests.test_event_bus import BUSES, batch, numbers


@pytest.mark.parametrize("make_bus", BUSES)
def test_the_whole_log_comes_back_in_order_with_write_times(make_bus):
    bus = make_bus()
    response_id = f"resp_retained_{os.getpid()}"

    async def scenario():
        writer = bus.writer(response_id)
        stamper = EventStamper()
        await writer.append(batch(stamper, 2), urgent=True)
        await writer.append(batch(stamper, 3), urgent=True)
        running = bus.retained(response_id)
        await writer.append(batch(stamper, 1, end=True))
        return running, bus.retained(response_id)

    running, ended = asyncio.run(scenario())
    assert numbers(running.entries) == [0, 1, 2, 3, 4]
    assert numbers(ended.entries) == [0, 1, 2, 3, 4, 5]
    assert [entry.end for entry in ended.entries] == [False, False, True]
    times = [entry.at for entry in ended.entries]
    assert all(isinstance(at, float) for at in times)
    assert times == sorted(times)
    assert 0 < ended.expires_in <= 60


@pytest.mark.parametrize("make_bus", BUSES)
def test_an_unknown_response_has_no_log(make_bus):
    assert make_bus().retained("resp_never_written") is None


def test_entries_written_before_timestamps_decode_without_a_time():
    entry = decode(b"1-2", {b"f": b"0", b"d": b"event: x\ndata: {}\n\n", b"e": b"1"})
    assert (entry.first, entry.last, entry.end, entry.at) == (0, 2, True, None)
    stamped = decode(b"1-2", {b"f": b"0", b"d": b"", b"t": b"1700000000123"})
    assert stamped.at == 1700000000.123
