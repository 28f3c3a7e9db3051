"""The Redis bus's relay path on a real Redis: entries heard by pub/sub, the streams read
only to catch up (a gap, a writer that does not publish, a new or resumed reader), on
several web and worker processes (each a bus of its own: its own connections), a lost
pub/sub connection and a restarted reader."""
import asyncio
import os

import redis

from responses_app.bus.entries import Entry, error_entry
from responses_app.bus.redis import RedisEventBus
from responses_app.translation.numbering import EventStamper
from tests.servers import BUS_REDIS_DB, REDIS_BASE_URL
from tests.test_event_bus import batch, collect, numbers, redis_bus, run

URL = f"{REDIS_BASE_URL}/{BUS_REDIS_DB}"


def other_process_bus() -> RedisEventBus:
    """Another host's view of the same Redis (flushes nothing)."""
    return redis_bus(flush=False)


def unpublished(response_id: str, entry: Entry) -> None:
    """Append `entry` as a worker of the previous release does: XADD alone, no message."""
    fields = {"f": entry.first, "d": b"\n".join(entry.events), "t": 0}
    if entry.end:
        fields["e"] = 1
    redis.Redis.from_url(URL).xadd(f"gw:events:{response_id}", fields, id=f"1-{entry.last}")


def test_several_web_and_worker_hosts_each_reader_gets_its_stream_exactly(monkeypatch):
    monkeypatch.setattr("responses_app.bus.redis_reader.POLL_SECONDS", 60)  # pub/sub alone
    web_one, web_two, worker_one, worker_two = (redis_bus(), other_process_bus(),
                                                other_process_bus(), other_process_bus())
    first, second = (f"resp_hosts_{os.getpid()}_{n}" for n in range(2))

    async def scenario():
        one_first = await web_one.subscribe(first, -1)
        one_second = await web_one.subscribe(second, -1)
        two_first = await web_two.subscribe(first, -1)
        await asyncio.sleep(0.1)  # the subscriptions hold
        stampers = {first: EventStamper(), second: EventStamper()}
        writers = {first: worker_one.writer(first), second: worker_two.writer(second)}
        for _ in range(3):
            for response_id in (first, second):
                await writers[response_id].append(batch(stampers[response_id], 2), urgent=True)
        late = await web_two.subscribe(first, 3)  # resumes from sequence number 3
        for response_id in (first, second):
            await writers[response_id].append(batch(stampers[response_id], 1, end=True))
        return [await collect(subscription)
                for subscription in (one_first, one_second, two_first, late)]

    got = run(scenario(), web_one, web_two, worker_one, worker_two)
    assert [numbers(entries) for entries in got] == [list(range(7))] * 3 + [[4, 5, 6]]


def test_a_message_missed_is_read_from_the_stream_at_once(monkeypatch):
    """Entries 2-3 are appended without a message (a writer of the previous release): the
    next message does not follow the reader's cursor, so the stream itself is read then,
    not at the next poll."""
    monkeypatch.setattr("responses_app.bus.redis_reader.POLL_SECONDS", 60)
    bus = redis_bus()
    response_id = f"resp_gap_{os.getpid()}"

    async def scenario():
        subscription = await bus.subscribe(response_id, -1)
        await asyncio.sleep(0.1)
        stamper, writer = EventStamper(), bus.writer(response_id)
        await writer.append(batch(stamper, 2), urgent=True)
        unpublished(response_id, batch(stamper, 2))
        await writer.append(batch(stamper, 1, end=True))
        return await collect(subscription, timeout=5)

    assert numbers(run(scenario(), bus)) == [0, 1, 2, 3, 4]


def test_a_writer_that_does_not_publish_is_read_at_the_poll(monkeypatch):
    monkeypatch.setattr("responses_app.bus.redis_reader.POLL_SECONDS", 0.2)
    bus = redis_bus()
    response_id = f"resp_silent_{os.getpid()}"

    async def scenario():
        subscription = await bus.subscribe(response_id, -1)
        await asyncio.sleep(0.1)
        stamper = EventStamper()
        unpublished(response_id, batch(stamper, 3))
        unpublished(response_id, batch(stamper, 1, end=True))
        return await collect(subscription, timeout=5)

    assert numbers(run(scenario(), bus)) == [0, 1, 2, 3]


def test_an_end_from_outside_is_heard_at_once(monkeypatch):
    monkeypatch.setattr("responses_app.bus.redis_reader.POLL_SECONDS", 60)
    bus = redis_bus()
    response_id = f"resp_outside_{os.getpid()}"

    async def scenario():
        subscription = await bus.subscribe(response_id, -1)
        await asyncio.sleep(0.1)
        stamper = EventStamper()
        await bus.writer(response_id).append(batch(stamper, 2), urgent=True)
        assert numbers([await subscription.get(5)]) == [0, 1]
        assert bus.append_now(response_id, batch(stamper, 1, end=True), seen=1)
        return await subscription.get(5)

    end = run(scenario(), bus)
    assert (end.first, end.last, end.end, numbers([end])) == (2, 2, True, [2])


def test_a_lost_pubsub_connection_fails_its_readers_and_a_resumed_reader_gets_the_rest():
    bus, worker = redis_bus(), other_process_bus()
    response_id = f"resp_lost_{os.getpid()}"
    server = redis.Redis.from_url(URL)

    async def scenario():
        subscription = await bus.subscribe(response_id, -1)
        await asyncio.sleep(0.1)
        stamper, writer = EventStamper(), worker.writer(response_id)
        await writer.append(batch(stamper, 3), urgent=True)
        assert numbers([await subscription.get(5)]) == [0, 1, 2]
        assert server.client_kill_filter(_type="pubsub") == 1  # the web's one listener
        failure = await subscription.get(5)
        subscription.close()
        await writer.append(batch(stamper, 2), urgent=True)
        resumed = await bus.subscribe(response_id, 2)  # the client's `starting_after=2`
        await writer.append(batch(stamper, 1, end=True))
        return failure, await collect(resumed)

    failure, resumed = run(scenario(), bus, worker)
    assert (failure.end, failure.error["status"]) == (True, 503)
    assert numbers(resumed) == [3, 4, 5]


def test_a_restarted_reader_resumes_from_its_cursor_and_leaves_no_subscription():
    """A web process ends mid-stream; another one (a new bus) serves the client's resume."""
    first_web, second_web, worker = redis_bus(), other_process_bus(), other_process_bus()
    response_id = f"resp_restart_{os.getpid()}"
    channel = f"gw:events:{response_id}"
    server = redis.Redis.from_url(URL)

    async def before_restart():
        subscription = await first_web.subscribe(response_id, -1)
        await asyncio.sleep(0.1)
        await worker.writer(response_id).append(batch(EventStamper(), 3), urgent=True)
        return numbers([await subscription.get(5)])

    async def after_restart():
        stamper = EventStamper()
        stamper.stamp([{"type": "x"}] * 3)  # the run's numbering goes on
        writer = worker.writer(response_id)
        await writer.append(batch(stamper, 2), urgent=True)
        resumed = await second_web.subscribe(response_id, 2)
        await writer.append(batch(stamper, 1, end=True))
        entries = await collect(resumed)  # closes it
        await asyncio.sleep(0.1)  # its UNSUBSCRIBE reaches Redis
        return entries, server.pubsub_numsub(channel)

    assert run(before_restart(), first_web, worker) == [0, 1, 2]
    entries, subscribed = run(after_restart(), second_web, worker)
    assert numbers(entries) == [3, 4, 5]
    assert subscribed == [(channel.encode(), 0)]


def test_an_error_from_outside_after_events_reaches_the_reader_as_a_read_would(monkeypatch):
    """An error entry appended from outside sorts above every event (`2-0`): a read of the
    stream from any cursor brings it, so the message does too (through that read)."""
    monkeypatch.setattr("responses_app.bus.redis_reader.POLL_SECONDS", 60)
    bus = redis_bus()
    response_id = f"resp_outside_error_{os.getpid()}"

    async def scenario():
        subscription = await bus.subscribe(response_id, -1)
        await asyncio.sleep(0.1)
        await bus.writer(response_id).append(batch(EventStamper(), 2), urgent=True)
        assert numbers([await subscription.get(5)]) == [0, 1]
        assert bus.append_now(response_id, error_entry(502, {"error": {"message": "gone"}}))
        error = await subscription.get(5)
        subscription.close()
        return error

    error = run(scenario(), bus)
    assert error.end
    assert error.error == {"status": 502, "body": {"error": {"message": "gone"}}, "headers": {}}
