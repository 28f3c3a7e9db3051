"""The run loop's tick (worker/loop_tick.py): paced streams pushed while the loop sleeps out
its ticks arrive whole and in order; the loop never sleeps while a run starts or ends, nor
with fewer streams than the threshold; and the bus writer of a ticking loop sends its
entries at once, without its own flush tick."""
import asyncio

import redis

from responses_app.bus.entries import Entry
from responses_app.bus.redis import RedisEventBus
from responses_app.translation.numbering import EventStamper
from responses_app.worker import loop_tick, upstream
from responses_app.worker.loop_tick import LoopTick
from responses_app.worker.upstream import open_chat_stream
from tests.scripted_http import CHUNKED_HEAD, DONE, LAST_CHUNK, ScriptedServer, chunk, sse
from tests.servers import BUS_REDIS_DB, REDIS_BASE_URL

BODY = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
CHUNKS = [{"choices": [{"index": 0, "delta": {"content": f"w{n} "}}]} for n in range(12)]


def run(coroutine):
    async def scenario():
        try:
            return await asyncio.wait_for(coroutine, 30)
        finally:
            await upstream.close_loop_client()

    return asyncio.run(scenario())


async def paced(reader, writer, number):
    """CHUNKS one HTTP chunk each, 15 ms apart, then [DONE] and the end."""
    writer.write(CHUNKED_HEAD)
    for c in CHUNKS:
        writer.write(chunk(sse(c)))
        await writer.drain()
        await asyncio.sleep(0.015)
    writer.write(chunk(DONE) + LAST_CHUNK)
    await writer.drain()


async def one_run(route) -> list:
    """A run's upstream turn as run_streaming reads it: the first batch pulled (the run is
    starting), the rest pushed (its steady state)."""
    received = []
    with loop_tick.running():
        async with open_chat_stream(route, BODY, 0.05) as batches:
            async for batch in batches:
                received += batch
                break
            await batches.push(received.extend)
    return received


def test_paced_streams_pushed_while_the_loop_ticks_arrive_whole_and_in_order():
    changes = []

    async def scenario():
        tick = LoopTick(asyncio.get_running_loop(), 0.02, 2, changes.append)
        tick.start()
        try:
            async with ScriptedServer(paced) as server:
                answers = await asyncio.gather(*(one_run(server.route()) for _ in range(4)))
        finally:
            tick.stop()
        return answers, tick.sleeps

    answers, sleeps = run(scenario())
    assert answers == [CHUNKS] * 4
    assert sleeps > 0  # the loop did sleep out ticks while the four streamed
    assert changes == [True, False] * (len(changes) // 2) and changes


def test_the_loop_does_not_sleep_while_a_run_starts_or_ends_or_with_few_streams():
    async def scenario():
        tick = LoopTick(asyncio.get_running_loop(), 0.01, 2)
        tick.start()
        seen = []
        try:
            with loop_tick.running(), loop_tick.running():
                seen.append(tick.steady())  # two runs starting
                with loop_tick.pushing():
                    seen.append(tick.steady())  # one streams, one starts
                    with loop_tick.pushing():
                        seen.append(tick.steady())  # both stream
                    seen.append(tick.steady())  # one ends
                    await asyncio.sleep(0.1)  # loop iterations: no sleep while one ends
            with loop_tick.running(), loop_tick.pushing():
                seen.append(tick.steady())  # one stream: under the threshold
        finally:
            tick.stop()
        return seen, tick.sleeps

    assert run(scenario()) == ([False, False, True, False, False], 0)


def test_a_ticking_loops_writer_sends_its_entries_at_once():
    """Its flush tick (10 s here) would hold an entry that follows a flush; while the loop
    ticks, each poll's entries go out at once."""
    url = f"{REDIS_BASE_URL}/{BUS_REDIS_DB}"
    redis.Redis.from_url(url).flushdb()

    async def scenario(ticking: bool):
        bus = RedisEventBus(url, retention_seconds=60, run_deadline_seconds=60,
                            flush_interval=10.0, flush_tick=10.0)
        loop = asyncio.get_running_loop()
        bus.loop_ticking(loop, ticking)
        try:
            stampers = {name: EventStamper() for name in (f"a{ticking}", f"b{ticking}")}
            writers = {name: bus.writer(name) for name in stampers}
            for round_ in range(3):
                for name, writer in writers.items():
                    stamper = stampers[name]
                    first = stamper.next_sequence_number
                    events = stamper.stamp([{"type": "response.output_text.delta",
                                             "delta": f"{name}{round_}"}])
                    writer.put(Entry(first, first, events))
                await asyncio.sleep(0.05)  # the flush of the round (or its timer)
            return {name: [(entry.first, entry.last) for entry in
                           bus.read_retained(name).entries]
                    for name in writers}
        finally:
            await bus.aclose()

    assert asyncio.run(scenario(True)) == {"aTrue": [(0, 0), (1, 1), (2, 2)],
                                           "bTrue": [(0, 0), (1, 1), (2, 2)]}
    # not ticking: the first round went at once, the others wait for the 10 s flush tick
    assert asyncio.run(scenario(False)) == {"aFalse": [(0, 0)], "bFalse": [(0, 0)]}
