"""Ends appended from outside a run (the watchdog failing an orphaned run): the run, if it
outlived its failure (a worker cut off by a partition, back later), can no longer write,
however far its sequence numbers got meanwhile; and the end waits for nothing the
watchdog did not read."""
import os

import pytest

from responses_app.bus import StreamFenced
from responses_app.translation.numbering import EventStamper
from tests.test_event_bus import BUSES, batch, collect, numbers, redis_bus, run


@pytest.mark.parametrize("make_bus", BUSES)
def test_an_end_from_outside_fences_off_the_run_however_far_it_got(make_bus):
    bus = make_bus()
    response_id = f"resp_outside_end_{os.getpid()}"

    async def scenario():
        writer, stamper = bus.writer(response_id), EventStamper()
        await writer.append(batch(stamper, 3), urgent=True)  # 0..2 reached the bus
        run_went_on = EventStamper(6)  # 3..5 were lost on the way (the partition)
        assert bus.append_now(response_id, batch(EventStamper(3), 2, end=True), seen=1)
        with pytest.raises(StreamFenced):  # 6..12: above the end's numbers, still refused
            await writer.append(batch(run_went_on, 7), urgent=True)
        return await collect(await bus.subscribe(response_id, -1))

    assert numbers(run(scenario(), bus)) == [0, 1, 2, 3, 4]


def test_an_end_from_outside_is_refused_when_the_run_wrote_after_it_was_read():
    bus = redis_bus()
    response_id = f"resp_outside_late_{os.getpid()}"

    async def scenario():
        writer, stamper = bus.writer(response_id), EventStamper()
        await writer.append(batch(stamper, 3), urgent=True)
        seen = len(bus.read_retained(response_id).entries)
        await writer.append(batch(stamper, 2), urgent=True)  # written after the read
        refused = not bus.append_now(response_id, batch(EventStamper(3), 1, end=True), seen)
        await writer.append(batch(stamper, 1, end=True))
        return refused, await collect(await bus.subscribe(response_id, -1))

    refused, entries = run(scenario(), bus)
    assert refused
    assert numbers(entries) == [0, 1, 2, 3, 4, 5]
