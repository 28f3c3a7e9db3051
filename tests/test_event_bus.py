"""The event bus contract, on real Redis and on the in-process bus: replay from any
sequence number, live tail, the end marker, pre-start errors, and one writer per stream."""
import asyncio
import os

import orjson
import pytest
import redis

from responses_app.bus import KEEPALIVE, StreamFenced
from responses_app.bus.entries import Entry, error_entry
from responses_app.bus.memory import MemoryEventBus
from responses_app.bus.redis import RedisEventBus
from responses_app.translation.numbering import EventStamper
from tests.servers import BUS_REDIS_DB, REDIS_BASE_URL



def memory_bus():
    return MemoryEventBus(retention_seconds=60)


def redis_bus(flush=True):
    url = f"{REDIS_BASE_URL}/{BUS_REDIS_DB}"
    if flush:
        redis.Redis.from_url(url).flushdb()
    return RedisEventBus(url, retention_seconds=60, run_deadline_seconds=60,
                         flush_interval=0.005)


def memory_buses():
    """Two writers of one process share the in-process bus."""
    bus = memory_bus()
    return bus, bus


def redis_buses():
    """Two processes' views of Redis: a zombie run elsewhere has its own writer."""
    return redis_bus(), redis_bus(flush=False)


BUSES = [pytest.param(memory_bus, id="memory"), pytest.param(redis_bus, id="redis")]


def run(scenario, *buses):
    """asyncio.run(scenario), then the buses' connections on its loop closed: they belong
    to that loop, which ends here."""
    async def closing():
        try:
            return await scenario
        finally:
            for bus in buses:
                if isinstance(bus, RedisEventBus):
                    await bus.aclose()

    return asyncio.run(closing())


def batch(stamper, count, end=False):
    first = stamper.next_sequence_number
    events = stamper.stamp([{"type": "response.output_text.delta", "delta": f"d{first + i}"}
                            for i in range(count)])
    return Entry(first, stamper.next_sequence_number - 1, events, end=end)


def numbers(entries):
    return [orjson.loads(event)["sequence_number"]
            for entry in entries for event in entry.events]


async def collect(subscription, timeout=5.0):
    entries = []
    while True:
        entry = await subscription.get(timeout)
        assert entry is not KEEPALIVE, f"stalled after {numbers(entries)}"
        entries.append(entry)
        if entry.end:
            subscription.close()
            return entries


@pytest.mark.parametrize("make_bus", BUSES)
def test_replay_then_live_tail_gives_every_event_once(make_bus):
    bus = make_bus()

    async def scenario():
        response_id = f"resp_tail_{os.getpid()}"
        writer = bus.writer(response_id)
        stamper = EventStamper()
        await writer.append(batch(stamper, 3), urgent=True)
        await writer.append(batch(stamper, 4))
        early = await bus.subscribe(response_id, -1)
        middle = await bus.subscribe(response_id, 4)
        await writer.append(batch(stamper, 2))
        await writer.append(batch(stamper, 1, end=True))
        late = await bus.subscribe(response_id, 8)
        return await collect(early), await collect(middle), await collect(late)

    early, middle, late = run(scenario(), bus)
    assert numbers(early) == list(range(10))
    assert numbers(middle) == list(range(5, 10))
    assert numbers(late) == [9]


@pytest.mark.parametrize("make_bus", BUSES)
def test_a_reader_after_the_end_gets_an_empty_end_and_keeps_the_ends_last_event(make_bus):
    """A resume at or past the last event: nothing to send, an empty end (its relay's span
    takes the outcome of `passed_end`, the end's last event: relay_span.py); a stream that
    ended without events (a cancelled run) has none to keep, nor has a reader before the
    end."""
    bus = make_bus()

    async def scenario():
        ended, cancelled = (f"resp_passed_{os.getpid()}_{n}" for n in range(2))
        stamper = EventStamper()
        await bus.writer(ended).append(batch(stamper, 3, end=True), urgent=True)  # 0..2
        stopped = EventStamper()
        writer = bus.writer(cancelled)
        await writer.append(batch(stopped, 2), urgent=True)  # 0..1, then an end without
        await writer.append(Entry(2, 1, [], end=True), urgent=True)
        readers = [await bus.subscribe(ended, 2), await bus.subscribe(ended, 7),
                   await bus.subscribe(ended, 1), await bus.subscribe(cancelled, 1)]
        return [(await collect(reader), reader.passed_end) for reader in readers]

    (at, at_end), (past, past_end), (before, before_end), (stop, stop_end) = run(
        scenario(), bus)
    terminal = orjson.dumps({"type": "response.output_text.delta", "delta": "d2",
                             "sequence_number": 2})
    assert [(e.first, e.last, e.events, e.end) for e in at] == [(3, 2, [], True)]
    assert at_end == terminal
    assert [(e.first, e.last, e.events, e.end) for e in past] == [(8, 7, [], True)]
    assert past_end == terminal
    assert (numbers(before), before_end) == ([2], None)
    assert ([(e.first, e.last, e.events, e.end) for e in stop], stop_end) == (
        [(2, 1, [], True)], None)


@pytest.mark.parametrize("make_bus", BUSES)
def test_streams_subscribed_while_the_reader_waits_are_all_served(make_bus):
    """Subscribes during one blocking read share a wake-up: none of them is left out."""
    bus = make_bus()

    async def scenario():
        ids = [f"resp_wait_{os.getpid()}_{n}" for n in range(4)]
        first = await bus.subscribe(ids[0], -1)
        await asyncio.sleep(0.2)  # the reader now blocks on the first stream alone
        others = [await bus.subscribe(response_id, -1) for response_id in ids[1:]]

        async def write(response_id):
            stamper = EventStamper()
            writer = bus.writer(response_id)
            await writer.append(batch(stamper, 2))
            await writer.append(batch(stamper, 1, end=True))

        for response_id in ids[1:]:  # the first stream stays silent: no wake-up from it
            await write(response_id)
        served = [await collect(subscription) for subscription in others]
        await write(ids[0])
        return [await collect(first), *served]

    assert [numbers(entries) for entries in run(scenario(), bus)] == [[0, 1, 2]] * 4


@pytest.mark.parametrize("make_bus", BUSES)
def test_an_error_before_start_reaches_the_reader(make_bus):
    bus = make_bus()

    async def scenario():
        response_id = f"resp_err_{os.getpid()}"
        writer = bus.writer(response_id)
        subscription = await bus.subscribe(response_id, -1)
        await writer.append(error_entry(429, {"error": {"message": "slow down"}},
                                        {"Retry-After": "7"}))
        entry = await subscription.get(5)
        # closed, as the relay does after an error: a reader left open would be read again
        # and again (the error entry stays after its cursor), so the shared read never
        # ends and asyncio.run's cleanup could wait on it for good
        subscription.close()
        return entry

    entry = run(scenario(), bus)
    assert entry.error == {"status": 429, "body": {"error": {"message": "slow down"}},
                           "headers": {"Retry-After": "7"}}


@pytest.mark.parametrize("make_buses", [pytest.param(memory_buses, id="memory"),
                                        pytest.param(redis_buses, id="redis")])
def test_a_second_writer_is_fenced_off(make_buses):
    bus, other = make_buses()

    async def scenario():
        response_id = f"resp_fence_{os.getpid()}"
        first, second = bus.writer(response_id), other.writer(response_id)
        stamper = EventStamper()
        await first.append(batch(stamper, 3), urgent=True)
        with pytest.raises(StreamFenced):
            await second.append(batch(EventStamper(), 2), urgent=True)
        subscription = await bus.subscribe(response_id, -1)
        await first.append(batch(stamper, 1, end=True))
        return await collect(subscription)

    assert numbers(run(scenario(), bus, other)) == [0, 1, 2, 3]



def test_a_stream_lives_for_the_run_then_for_the_retention():
    bus = RedisEventBus(f"{REDIS_BASE_URL}/{BUS_REDIS_DB}", retention_seconds=60,
                        run_deadline_seconds=600, flush_interval=0.005)
    client = redis.Redis.from_url(bus.url)
    key = f"gw:events:resp_ttl_{os.getpid()}"
    client.delete(key)

    async def scenario():
        writer = bus.writer(key.rsplit(":", 1)[1])
        stamper = EventStamper()
        await writer.append(batch(stamper, 2), urgent=True)
        running = client.pttl(key)
        await writer.append(batch(stamper, 3), urgent=True)
        await writer.append(batch(stamper, 1, end=True))
        return running, client.pttl(key), client.xlen(key)

    running, ended, length = run(scenario(), bus)
    assert 600_000 < running <= 660_000  # the run's deadline, then the retention
    assert 55_000 < ended <= 60_000
    assert length == 3


def test_entries_reach_readers_as_published_without_a_read_of_the_streams(monkeypatch):
    """No poll of silent streams in this test's time: a reader subscribed while another
    stream is busy gets its entries by pub/sub, as they are flushed."""
    monkeypatch.setattr("responses_app.bus.redis_reader.POLL_SECONDS", 60)
    bus = redis_bus()

    async def scenario():
        busy, fresh = (f"resp_first_{os.getpid()}_{n}" for n in range(2))
        busy_subscription = await bus.subscribe(busy, -1)
        await bus.writer(busy).append(batch(EventStamper(), 1), urgent=True)
        assert numbers([await busy_subscription.get(5)]) == [0]
        subscription = await bus.subscribe(fresh, -1)
        await asyncio.sleep(0.1)  # its subscription holds; its catch-up read found nothing
        stamper = EventStamper()
        await bus.writer(fresh).append(batch(stamper, 2), urgent=True)
        first = await subscription.get(5)
        subscription.close()
        busy_subscription.close()
        return first

    assert numbers([run(scenario(), bus)]) == [0, 1]


def test_a_reader_joining_behind_another_during_a_read_misses_nothing():
    """A live reader hears entries past its cursor when a second reader of the same stream
    joins from the start, and entries arrive before its catch-up read is answered: what
    pub/sub brings starts after the live reader's cursor, and must not reach the second
    reader ahead of what it has not seen (it would skip those for good)."""
    bus = RedisEventBus(f"{REDIS_BASE_URL}/{BUS_REDIS_DB}", retention_seconds=60,
                        run_deadline_seconds=60, flush_interval=0.005)
    response_id = f"resp_behind_{os.getpid()}"
    redis.Redis.from_url(bus.url).delete(f"gw:events:{response_id}")

    async def scenario():
        writer, stamper = bus.writer(response_id), EventStamper()
        await writer.append(batch(stamper, 5), urgent=True)
        await writer.append(batch(stamper, 5), urgent=True)
        live = await bus.subscribe(response_id, 9)
        await writer.append(batch(stamper, 2), urgent=True)
        assert numbers([await live.get(5)]) == [10, 11]
        await asyncio.sleep(0.05)
        assert bus.append_now(response_id, batch(stamper, 3))  # published at once
        behind = await bus.subscribe(response_id, -1)  # joins before the message is read
        await writer.append(batch(stamper, 1, end=True))
        return await collect(live), await collect(behind)

    live, behind = run(scenario(), bus)
    assert numbers(live) == list(range(12, 16))
    assert numbers(behind) == list(range(16))


def ticking_bus(tick: float) -> RedisEventBus:
    """A bus whose writers flush a tick apart (`flush_interval` 30 s: never the wait)."""
    return RedisEventBus(f"{REDIS_BASE_URL}/{BUS_REDIS_DB}", retention_seconds=60,
                         run_deadline_seconds=60, flush_interval=30.0, flush_tick=tick)


async def subscribed_writer(reader_bus, writer_bus, response_id: str):
    """A subscription to `response_id` in force, and a writer of it with its stamper."""
    subscription = await reader_bus.subscribe(response_id, -1)
    await asyncio.sleep(0.1)  # the subscription holds
    return subscription, writer_bus.writer(response_id), EventStamper()


def test_an_entry_written_during_a_flush_waits_a_tick_not_the_interval():
    """With a flush tick, an entry written while a flush is in flight goes in the next flush,
    a tick after the last one started: not `flush_interval` after the flight (30 s here,
    the reader's bound 10 s). Each entry is its own Redis entry, in order."""
    reader_bus = redis_bus()
    writer_bus = ticking_bus(0.2)
    response_id = f"resp_tick_{os.getpid()}"

    async def scenario():
        subscription, writer, stamper = await subscribed_writer(reader_bus, writer_bus,
                                                                response_id)
        await writer.append(batch(stamper, 1))  # nothing flushed yet: its flush starts now
        await asyncio.sleep(0)  # the flusher takes it and sends it: in flight
        await writer.append(batch(stamper, 1))  # during that flush: waits for the tick
        entries = [await subscription.get(10.0), await subscription.get(10.0)]
        subscription.close()
        return entries

    entries = run(scenario(), reader_bus, writer_bus)
    assert KEEPALIVE not in entries
    assert [(entry.first, entry.last) for entry in entries] == [(0, 0), (1, 1)]
    assert numbers(entries) == [0, 1]


def test_flush_now_sends_at_once_what_waits_for_the_tick():
    """A pass of the worker's tick reads has its loop's bus flush what it read at once
    (worker/tick_reads.py): an entry written a moment after a flush, which would wait for
    the tick (30 s here, the reader's wait 5 s), goes when `flush_now` is called."""
    reader_bus = redis_bus()
    writer_bus = ticking_bus(30.0)
    response_id = f"resp_flush_now_{os.getpid()}"

    async def scenario():
        subscription, writer, stamper = await subscribed_writer(reader_bus, writer_bus,
                                                                response_id)
        await writer.append(batch(stamper, 1))  # nothing flushed yet: its flush starts now
        first = await subscription.get(10.0)
        await writer.append(batch(stamper, 1))  # a tick after that flush: 30 s away
        writer_bus.flush_now()
        second = await subscription.get(5.0)
        subscription.close()
        return [first, second]

    entries = run(scenario(), reader_bus, writer_bus)
    assert KEEPALIVE not in entries
    assert numbers(entries) == [0, 1]
