"""A reader's `direct` take (relay.write_through): the entries that arrive while it waits go
to `direct`, in order, on the deliverer's turn; the end, and whatever arrives while it is
busy, still come from `get()`."""
import asyncio
import os

import pytest

from responses_app.bus.subscription import Subscription
from responses_app.translation.numbering import EventStamper
from tests.test_event_bus import BUSES, batch, numbers, run


@pytest.mark.parametrize("make_bus", BUSES)
def test_entries_arriving_while_the_reader_waits_go_direct_in_order(make_bus):
    bus = make_bus()

    async def scenario():
        response_id = f"resp_direct_{os.getpid()}"
        subscription = await bus.subscribe(response_id, -1)
        direct = []
        subscription.direct = direct.append
        writer, stamper = bus.writer(response_id), EventStamper()

        async def write():
            for _ in range(5):
                await writer.append(batch(stamper, 2))
                await asyncio.sleep(0.05)
            await writer.append(batch(stamper, 1, end=True))

        writing = asyncio.ensure_future(write())
        got = [await subscription.get(5.0)]
        while not got[-1].end:
            got.append(await subscription.get(5.0))
        await writing
        subscription.close()
        return direct, got

    direct, got = run(scenario(), bus)
    assert numbers(direct + got) == list(range(11))
    assert direct and not any(entry.end for entry in direct)
    assert got[-1].end


def test_an_entry_arriving_while_the_reader_is_busy_is_queued():
    async def scenario():
        subscription = Subscription("resp_busy", -1)
        direct = []
        subscription.direct = direct.append
        stamper = EventStamper()
        subscription.deliver(batch(stamper, 2))  # nobody waits in get(): queued
        first = await subscription.get(1.0)
        waiting = asyncio.ensure_future(subscription.get(1.0))
        await asyncio.sleep(0)  # the reader now waits
        subscription.deliver(batch(stamper, 1))
        subscription.deliver(batch(stamper, 1, end=True))
        last = await waiting
        return direct, first, last

    direct, first, last = asyncio.run(scenario())
    assert numbers([first]) == [0, 1]
    assert numbers(direct) == [2]
    assert numbers([last]) == [3] and last.end
