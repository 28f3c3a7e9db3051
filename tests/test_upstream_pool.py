"""A route's replicas (upstreams/pool.py) through the worker's upstream call, against
scripted HTTP servers on 127.0.0.1 and the deployment's store: real Redis (and the
embedded deployment's in-process store, which must behave the same): spread by least in
flight, failover before the first byte, the cool-down, chain affinity kept, bounded by
load, moved once when its replica fails, never to a replica cooling down."""
import asyncio
import contextlib
import json
import os
import subprocess
import sys

import pytest
import redis
from prometheus_client import REGISTRY

from responses_app.bus import event_bus
from responses_app.worker import upstream
from responses_app.worker.upstream import UpstreamRejected, open_chat_stream
from tests.fake_upstream import FakeUpstream
from tests.scripted_http import CHUNKED_HEAD, ScriptedServer, answer, chunk, sse
from tests.servers import REDIS_BASE_URL, SPARE_REDIS_DB, free_port
from upstreams import pool
from upstreams.replicas import Placement
from upstreams.routing import Route

BODY = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
CHUNKS = [{"choices": [{"index": 0, "delta": {"content": f"w{n} "}}]} for n in range(3)]
REDIS_URL = f"{REDIS_BASE_URL}/{SPARE_REDIS_DB}"


@pytest.fixture(params=["redis", "memory"])
def store(request, settings):
    """The deployment's replica store: Redis (emptied), or the embedded one (in memory)."""
    settings.EMBEDDED = request.param == "memory"
    settings.REDIS_URL = REDIS_URL
    settings.UPSTREAM_REPLICA_COOLDOWN_SECONDS = 30.0
    settings.UPSTREAM_AFFINITY_MAX_EXCESS = 1
    redis.Redis.from_url(REDIS_URL).flushdb()
    pool.replica_store.cache_clear()
    event_bus.cache_clear()  # the calls' tick reads flush this mode's bus
    yield request.param
    pool.replica_store.cache_clear()
    event_bus.cache_clear()


def run(coroutine):
    async def scenario():
        try:
            return await asyncio.wait_for(coroutine, 20)
        finally:
            await upstream.close_loop_client()

    return asyncio.run(scenario())


def route_of(*urls, limit=0) -> Route:
    return Route(name="pool", base_url=urls[0], more_urls=tuple(urls[1:]), api_key="",
                 connect_timeout=1.0, idle_timeout=5.0, max_concurrency=limit)


async def whole(route: Route, placement: Placement | None = None) -> list[dict]:
    received = []
    async with open_chat_stream(route, BODY, 0.0, placement=placement) as batches:
        async for batch in batches:
            received += batch
    return received


async def answering(reader, writer, number):
    await answer(writer, CHUNKS)


async def failing(reader, writer, number):
    payload = b'{"error": {"message": "overloaded"}}'
    writer.write(b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n"
                 b"content-length: %d\r\n\r\n%s" % (len(payload), payload))
    await writer.drain()


class Replicas(contextlib.AsyncExitStack):
    """n scripted servers (each its own script), their route, and who got each request."""

    def __init__(self, *scripts, limit=0):
        super().__init__()
        self.scripts, self.limit = scripts, limit

    async def __aenter__(self):
        await super().__aenter__()
        self.servers = [await self.enter_async_context(ScriptedServer(s)) for s in self.scripts]
        self.route = route_of(*(s.base_url for s in self.servers), limit=self.limit)
        return self

    def name(self, url: str | None) -> str:
        """The replica's letter (A, B, ...) from its URL."""
        return "ABCDEFG"[[s.base_url for s in self.servers].index(url)]

    def counts(self) -> list[int]:
        return [len(s.requests) for s in self.servers]


def held(release: asyncio.Event):
    """A script that sends its head and first chunk, then waits for `release`."""
    async def script(reader, writer, number):
        writer.write(CHUNKED_HEAD + chunk(sse(CHUNKS[0])))
        await writer.drain()
        await release.wait()
        await answer(writer, [])  # not reached by a held call's test: it is closed first
    return script


def test_calls_spread_by_least_in_flight(store):
    """Six held calls on three replicas: two each; then, with one replica's calls ended,
    the next two go to it."""
    async def scenario():
        release = asyncio.Event()
        async with Replicas(held(release), held(release), held(release)) as replicas:
            async with contextlib.AsyncExitStack() as calls:
                chosen = []
                for _ in range(6):
                    placement = Placement()
                    await calls.enter_async_context(
                        open_chat_stream(replicas.route, BODY, placement=placement))
                    chosen.append(replicas.name(placement.replica))
                spread = sorted(chosen)
                counts = replicas.counts()
            await asyncio.sleep(0.05)  # the releases reach the store
            async with contextlib.AsyncExitStack() as calls:  # all released: each 0
                later = []
                for _ in range(3):
                    placement = Placement()
                    await calls.enter_async_context(
                        open_chat_stream(replicas.route, BODY, placement=placement))
                    later.append(replicas.name(placement.replica))
            return spread, counts, sorted(later)

    spread, counts, later = run(scenario())
    assert spread == ["A", "A", "B", "B", "C", "C"]
    assert counts == [2, 2, 2]
    assert later == ["A", "B", "C"]


def test_a_replica_that_fails_before_its_first_byte_is_skipped_and_cooled_down(store):
    """A 503 and a refused connection: the call goes on to the next replica at once, with
    the whole answer; the failed replicas get no further call while they cool down."""
    dead = f"http://127.0.0.1:{free_port()}/v1"

    async def scenario():
        async with Replicas(failing, answering) as replicas:
            route = route_of(replicas.servers[0].base_url, dead,
                             replicas.servers[1].base_url)
            outcomes = []
            for _ in range(4):
                placement = Placement()
                received = await whole(route, placement)
                outcomes.append((received == CHUNKS, replicas.name(placement.replica)
                                 if placement.replica != dead else "dead",
                                 placement.failovers))
            return outcomes, replicas.counts()

    outcomes, counts = run(scenario())
    # the first calls meet the failing replicas (in rotation), later ones only the healthy
    assert [ok for ok, _, _ in outcomes] == [True] * 4
    assert [name for _, name, _ in outcomes] == ["B"] * 4
    assert sum(failovers for _, _, failovers in outcomes) == 2
    assert counts == [1, 4]


def test_a_replica_is_tried_again_once_its_cool_down_is_over(store, settings):
    settings.UPSTREAM_REPLICA_COOLDOWN_SECONDS = 1.0
    state = {"failing": True}

    async def flaky(reader, writer, number):
        await (failing if state["failing"] else answering)(reader, writer, number)

    async def scenario():
        async with Replicas(flaky, answering) as replicas:
            failed = []
            for _ in range(2):  # the rotation starts one of them on A: it fails over
                placement = Placement()
                await whole(replicas.route, placement)
                failed.append((replicas.name(placement.replica), placement.failovers))
            state["failing"] = False  # A is well again, but cooling down
            during = []
            for _ in range(2):
                placement = Placement()
                await whole(replicas.route, placement)
                during.append(replicas.name(placement.replica))
            counts = replicas.counts()
            await asyncio.sleep(1.1)
            after = []
            for _ in range(2):
                placement = Placement()
                await whole(replicas.route, placement)
                after.append(replicas.name(placement.replica))
            return sorted(failed), during, counts, sorted(after)

    failed, during, counts, after = run(scenario())
    assert failed == [("B", 0), ("B", 1)]
    assert during == ["B", "B"]
    assert counts == [1, 4]
    assert after == ["A", "B"]


def test_every_replica_cooling_down_is_a_503_with_retry_after_and_no_request(store):
    async def scenario():
        async with Replicas(failing, failing) as replicas:
            with pytest.raises(UpstreamRejected) as first:
                await whole(replicas.route)
            with pytest.raises(UpstreamRejected) as second:
                await whole(replicas.route)
            return first.value, second.value, replicas.counts()

    first, second, counts = run(scenario())
    assert (first.status, first.body["error"]["code"]) == (502, "upstream_error")
    assert first.body["error"]["message"] == (
        "The upstream model server failed with HTTP 503: overloaded")
    assert counts == [1, 1]  # each tried once; then both cooling down: no request at all
    assert second.status == 503
    assert second.body == {"error": {
        "message": "Every replica of the upstream 'pool' failed recently; retry in 30 s.",
        "type": "server_error", "param": None, "code": "upstream_unavailable"}}
    assert second.headers == {"Retry-After": "30"}


def affinity_count(outcome: str) -> float:
    return REGISTRY.get_sample_value("gateway_upstream_affinity_total",
                                     {"route": "pool", "outcome": outcome}) or 0.0


def test_a_chain_stays_on_its_replica_while_other_calls_spread(store):
    hits_before, unhealthy_before = affinity_count("hit"), affinity_count("unhealthy")

    async def scenario():
        async with Replicas(answering, answering, answering) as replicas:
            chain, others, previous = [], [], None
            for turn in range(6):
                placement = Placement.for_run(f"resp_{turn}", previous, None)
                await whole(replicas.route, placement)
                chain.append((replicas.name(placement.replica), placement.outcome))
                previous = f"resp_{turn}"
                other = Placement.for_run(f"other_{turn}", None, None)
                await whole(replicas.route, other)
                others.append(replicas.name(other.replica))
            return chain, others

    chain, others = run(scenario())
    first = chain[0][0]
    assert chain == [(first, "none")] + [(first, "hit")] * 5
    assert sorted(set(others)) == ["A", "B", "C"]
    assert affinity_count("hit") - hits_before == 5  # the metric counts hits and misses
    assert affinity_count("unhealthy") - unhealthy_before == 0


def test_a_conversation_and_referenced_items_keep_their_replica(store):
    async def scenario():
        async with Replicas(answering, answering) as replicas:
            first = Placement.for_run("resp_1", None, "conv_1")
            await whole(replicas.route, first)
            # the same conversation, and a request referencing resp_1's output item
            pool.remember_soon(replicas.route, ["item:msg_out_1"], first.replica)
            await asyncio.sleep(0.05)
            placed = []
            for n in range(4):
                turn = Placement.for_run(f"resp_c{n}", None, "conv_1")
                await whole(replicas.route, turn)
                referencing = Placement.for_run(f"resp_r{n}", None, None,
                                                ["msg_in_0", "msg_out_1", f"msg_new_{n}"])
                await whole(replicas.route, referencing)
                placed += [(turn.replica, turn.outcome), (referencing.replica,
                                                          referencing.outcome)]
            return first.replica, placed

    replica, placed = run(scenario())
    assert placed == [(replica, "hit")] * 8


def test_a_chain_leaves_its_replica_when_it_holds_too_many_more_calls(store):
    """UPSTREAM_AFFINITY_MAX_EXCESS = 1: with its replica two calls above the least loaded,
    the chain's next turn goes to the least loaded, once; the chain stays there."""
    async def scenario():
        release = asyncio.Event()
        async with Replicas(answering, answering) as replicas:
            first = Placement.for_run("resp_1", None, None)
            await whole(replicas.route, first)
            home = replicas.servers[[s.base_url for s in replicas.servers].index(first.replica)]
            home.script = held(release)
            pinned = route_of(first.replica, limit=100)  # two calls held on its replica
            async with contextlib.AsyncExitStack() as calls:
                for _ in range(2):
                    await calls.enter_async_context(open_chat_stream(pinned, BODY))
                home.script = answering
                second = Placement.for_run("resp_2", "resp_1", None)
                await whole(replicas.route, second)
            await asyncio.sleep(0.05)
            third = Placement.for_run("resp_3", "resp_2", None)
            await whole(replicas.route, third)
            return first.replica, [(p.replica, p.outcome) for p in (second, third)]

    home, placed = run(scenario())
    other = placed[0][0]
    assert other != home
    assert placed == [(other, "overloaded"), (other, "hit")]


def test_a_chain_whose_replica_fails_moves_once_and_stays_and_never_goes_back(store):
    state = {"a_fails": False}

    async def replica_a(reader, writer, number):
        await (failing if state["a_fails"] else answering)(reader, writer, number)

    async def scenario():
        async with Replicas(replica_a, answering, answering) as replicas:
            # the chain's last turn was served by A
            await pool.replica_store().remember("pool", ["resp:resp_0"],
                                                replicas.servers[0].base_url, 60_000)
            placed = []
            for turn in range(1, 6):
                placement = Placement.for_run(f"resp_{turn}", f"resp_{turn - 1}", None)
                await whole(replicas.route, placement)
                placed.append((replicas.name(placement.replica), placement.outcome,
                               placement.failovers))
                state["a_fails"] = turn == 2  # A fails turn 3's call, then is well again
            return placed, replicas.counts()[0]

    unhealthy_before = affinity_count("unhealthy")
    placed, calls_to_a = run(scenario())
    assert affinity_count("unhealthy") - unhealthy_before == 1
    moved = placed[2][0]
    assert moved in ("B", "C")
    assert placed == [("A", "hit", 0), ("A", "hit", 0), (moved, "unhealthy", 1),
                      (moved, "hit", 0), (moved, "hit", 0)]
    assert calls_to_a == 3  # turns 1 and 2, and turn 3's failed attempt: never again


def test_a_chain_whose_replica_is_cooling_down_is_not_sent_there(store):
    async def scenario():
        async with Replicas(answering, answering) as replicas:
            first = Placement.for_run("resp_1", None, None)
            await whole(replicas.route, first)
            await pool.replica_store().cool_down("pool", first.replica, 30)
            second = Placement.for_run("resp_2", "resp_1", None)
            await whole(replicas.route, second)
            counts = replicas.counts()
            return first.replica, second.replica, second.outcome, counts

    home, moved, outcome, counts = run(scenario())
    assert moved != home
    assert outcome == "unhealthy"
    assert sorted(counts) == [1, 1]


def test_a_chain_whose_replica_left_the_route_moves(store):
    async def scenario():
        async with Replicas(answering, answering) as replicas:
            await pool.replica_store().remember("pool", ["resp:resp_1"],
                                                "http://127.0.0.1:9/v1", 60_000)
            second = Placement.for_run("resp_2", "resp_1", None)
            await whole(replicas.route, second)
            return second.outcome, second.replica in [s.base_url for s in replicas.servers]

    assert run(scenario()) == ("gone", True)


def test_a_full_route_makes_the_next_call_wait_then_gives_up(store):
    async def scenario():
        release = asyncio.Event()
        async with Replicas(held(release), held(release), limit=2) as replicas:
            async with contextlib.AsyncExitStack() as calls:
                for _ in range(2):
                    await calls.enter_async_context(open_chat_stream(replicas.route, BODY))
                with pytest.raises(UpstreamRejected) as busy:
                    await whole(route_of(*replicas.route.replicas, limit=2))
            await asyncio.sleep(0.05)  # the releases reach the store
            for server in replicas.servers:
                server.script = answering
            return busy.value, await whole(replicas.route), replicas.counts()

    busy, after, counts = run(scenario())
    assert busy.status == 503
    assert busy.body["error"] == {
        "message": "The upstream 'pool' is at its limit of 2 concurrent requests.",
        "type": "server_error", "param": None, "code": "upstream_busy"}
    assert after == CHUNKS
    assert sorted(counts) == [1, 2]


def worker_process(spec: dict, lease_seconds: float) -> subprocess.Popen:
    """A process of its own calling the route through the deployment's Redis."""
    env = {**os.environ, "REDIS_URL": REDIS_URL, "UPSTREAM_LEASE_SECONDS": str(lease_seconds),
           "LOG_LEVEL": "WARNING", "WATCHDOG_ENABLED": "0",
           "SECRET_KEY": "test-secret-key-" + "x" * 40}
    return subprocess.Popen([sys.executable, "-m", "tests.pool_worker", json.dumps(spec)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)


def outcomes(process: subprocess.Popen, calls: int) -> list[dict]:
    return [json.loads(process.stdout.readline()) for _ in range(calls)]


def test_the_limit_holds_across_worker_processes_and_a_dead_ones_slots_lapse():
    """Two worker processes, three calls each, on a route of two replicas limited to four:
    four are held (two on each replica), two refused. One process is killed with its
    calls held: its slots lapse with their lease (1.5 s), and a third process then holds
    all four."""
    redis.Redis.from_url(REDIS_URL).flushdb()
    model = "bench-5-10-held1-pool"
    with FakeUpstream() as a, FakeUpstream() as b:
        # refused calls wait 2.5 s, longer than a lease: the held leases are renewed
        spec = {"urls": [a.base_url, b.base_url], "limit": 4, "calls": 3, "wait": 2.5,
                "model": model}
        first, second = worker_process(spec, 1.5), worker_process(spec, 1.5)
        try:
            seen = outcomes(first, 3), outcomes(second, 3)
            held = [o["held"] for o in seen[0] + seen[1] if "held" in o]
            refused = [o["refused"] for o in seen[0] + seen[1] if "refused" in o]
            in_flight = a.stats()["in_flight"], b.stats()["in_flight"]
            first.kill()  # its leases stay in Redis until they lapse
            second.communicate("release\n", timeout=20)
            third = worker_process({**spec, "calls": 4, "wait": 10.0}, 1.5)
            try:
                later = outcomes(third, 4)
                third.communicate("release\n", timeout=20)
            finally:
                third.kill()
        finally:
            first.kill()
            second.kill()
            a.release(model)
            b.release(model)
    assert sorted(held) == sorted([a.base_url] * 2 + [b.base_url] * 2)
    assert refused == ["upstream_busy", "upstream_busy"]
    assert in_flight == (2, 2)
    assert sorted(o["held"] for o in later) == sorted([a.base_url] * 2 + [b.base_url] * 2)
