"""Tick reads (responses_app/worker/tick_reads.py) over real HTTP, against scripted raw
servers on 127.0.0.1: under load, a paced stream leaves the loop's watch and is read by the
pass, what arrived between two passes in one read; its finish reason puts it back on the
watch; a stream alone, or over TLS, is never taken off it; an upstream that closes while
the pass holds its stream fails as it would on the watch. The tick is set far longer than
a test (60 s): each pass here is the test's own `read_now`."""
import asyncio
import ssl

import pytest

from responses_app.worker import http_stream, upstream
from responses_app.worker.upstream import UpstreamStreamFailed, open_chat_stream
from tests.scripted_http import CHUNKED_HEAD, DONE, LAST_CHUNK, ScriptedServer, chunk, sse
from tests.test_upstream_http import BODY, CHUNKS, run

FINISH = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
USAGE = {"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 2}}
ROLE = {"choices": [{"index": 0, "delta": {"role": "assistant"}}]}  # no output: never paced


@pytest.fixture(autouse=True)
def long_tick(settings):
    settings.STREAM_FLUSH_TICK_MS = 60_000
    settings.STREAM_TICK_READS = True


class Steps:
    """The test's side of a scripted answer: the server waits for `go(n)` before its n-th
    part and says `sent(n)` after it."""

    def __init__(self, parts: int):
        self.go_events = [asyncio.Event() for _ in range(parts)]
        self.sent_events = [asyncio.Event() for _ in range(parts)]

    async def serve(self, writer, parts: list[list[bytes]]) -> None:
        for n, writes in enumerate(parts):
            await self.go_events[n].wait()
            for data in writes:
                writer.write(data)
                await writer.drain()
                await asyncio.sleep(0.01)  # each its own HTTP chunk, in its own segment
            self.sent_events[n].set()

    def go(self, n: int) -> None:
        self.go_events[n].set()

    async def sent(self, n: int) -> None:
        await self.sent_events[n].wait()
        await asyncio.sleep(0.05)  # the last bytes are in our socket's buffer


def parts_of(*groups) -> list[list[bytes]]:
    return [[chunk(sse(c)) if isinstance(c, dict) else c for c in group] for group in groups]


async def with_another_stream(route, scenario, done: asyncio.Event):
    """Run `scenario()` while another answer streams on the same loop (the load that turns
    pacing on; itself without output, so never paced); the other answer ends after it."""
    started = asyncio.Event()  # `done`: the other answer's server ends it, its reader stops

    async def other():
        async with open_chat_stream(route, BODY, 0.05) as batches:
            async for _ in batches:
                started.set()
                await done.wait()

    task = asyncio.ensure_future(other())
    await started.wait()
    try:
        return await scenario()
    finally:
        done.set()
        await task


def other_answer(writer, other_done):
    async def answer():
        writer.write(CHUNKED_HEAD + chunk(sse(ROLE)))
        await writer.drain()
        await other_done.wait()
        writer.write(chunk(DONE) + LAST_CHUNK)
        await writer.drain()
    return answer()


def pass_now() -> None:
    client = upstream.http_client()
    client.tick_reads.read_now(asyncio.get_running_loop().time())


async def pushing(route, steps: Steps, observe):
    """Pull the first batch, then push the rest; `observe(batches, pushes, task)` drives the
    steps and passes while the push runs. Returns what was pushed, batch by batch."""
    pushes: list[list[dict]] = []
    async with open_chat_stream(route, BODY, 0.05) as batches:
        async for first in batches:
            assert first == [CHUNKS[0]]
            break
        task = asyncio.ensure_future(batches.push(pushes.append))
        try:
            await observe(batches.response, pushes, task)
        except BaseException:
            task.cancel()  # `observe` failed: the push is not left behind
            await asyncio.gather(task, return_exceptions=True)
            raise
        await task
    return pushes


def served(steps: Steps, parts: list[list[bytes]], observe, *, loaded=True, ssl=None,
           cut=False):
    """What `pushing` hands over of our answer (its first chunk, then `parts` as the steps
    say), with another answer streaming beside it if `loaded`; `cut`: the server closes
    after the parts, without the end."""
    other_done = None

    async def script(reader, writer, number):
        if loaded and number == 1:
            return await other_answer(writer, other_done)
        writer.write(CHUNKED_HEAD + chunk(sse(CHUNKS[0])))
        await writer.drain()
        await steps.serve(writer, parts)
        return "close" if cut else None

    async def scenario():
        nonlocal other_done
        other_done = asyncio.Event()
        async with ScriptedServer(script, ssl=ssl) as server:
            route = server.route()
            if not loaded:
                return await pushing(route, steps, observe)
            return await with_another_stream(
                route, lambda: pushing(route, steps, observe), other_done)

    return run(scenario())


def test_a_paced_stream_under_load_is_read_by_the_pass_and_its_finish_puts_it_back():
    steps = Steps(4)

    async def observe(response, pushes, task):
        steps.go(0)
        await steps.sent(0)
        assert pushes == [[CHUNKS[1]]]  # read as it came: the stream was not paced before
        transport = response.connection.transport
        assert not transport.is_reading()  # from that read on, the pass reads it
        steps.go(1)
        await steps.sent(1)
        assert pushes == [[CHUNKS[1]]]  # three chunks in the kernel, none read
        pass_now()
        assert pushes == [[CHUNKS[1]], CHUNKS[2:5]]  # one read
        pass_now()  # nothing more came: nothing handed over
        assert len(pushes) == 2
        steps.go(2)
        await steps.sent(2)
        assert len(pushes) == 2
        pass_now()
        assert pushes[2] == [FINISH]
        assert transport.is_reading()  # from the finish reason on, read as it comes
        steps.go(3)  # the usage chunk and the end: no pass needed

    parts = parts_of([CHUNKS[1]], CHUNKS[2:5], [FINISH], [USAGE, chunk(DONE) + LAST_CHUNK])
    pushes = served(steps, parts, observe)
    assert pushes == [[CHUNKS[1]], CHUNKS[2:5], [FINISH], [USAGE], []]


def stays_on_the_watch(steps: Steps):
    async def observe(response, pushes, task):
        steps.go(0)
        await steps.sent(0)
        assert response.connection.transport.is_reading()
        assert upstream.http_client().tick_reads.connections == set()
        steps.go(1)
    return observe


def test_a_stream_alone_stays_on_the_watch():
    steps = Steps(2)
    parts = parts_of([CHUNKS[1]], [CHUNKS[2], chunk(DONE) + LAST_CHUNK])
    pushes = served(steps, parts, stays_on_the_watch(steps), loaded=False)
    assert pushes == [[CHUNKS[1]], [CHUNKS[2]], []]


def test_a_tls_stream_under_load_stays_on_the_watch(tmp_path, monkeypatch):
    from tests.scripted_http import self_signed_certificate

    cert_path, key_path = self_signed_certificate(tmp_path)
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.load_cert_chain(cert_path, key_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert_path))
    http_stream._tls_context.cache_clear()
    steps = Steps(2)
    parts = parts_of([CHUNKS[1]], [CHUNKS[2], chunk(DONE) + LAST_CHUNK])
    try:
        pushes = served(steps, parts, stays_on_the_watch(steps), ssl=server_context)
    finally:
        http_stream._tls_context.cache_clear()
    assert pushes == [[CHUNKS[1]], [CHUNKS[2]], []]


def test_an_upstream_closing_while_the_pass_holds_its_stream_fails_after_what_it_sent():
    steps = Steps(2)

    async def observe(response, pushes, task):
        steps.go(0)
        await steps.sent(0)
        assert not response.connection.transport.is_reading()
        steps.go(1)
        await steps.sent(1)
        pass_now()  # the chunk, then (the socket at its end) back to the transport
        assert pushes == [[CHUNKS[1]], [CHUNKS[2]]]
        pass_now()

    with pytest.raises(UpstreamStreamFailed) as raised:
        served(steps, parts_of([CHUNKS[1]], [CHUNKS[2]]), observe, cut=True)
    assert raised.value.message == (
        "The upstream connection failed mid-stream: the upstream closed the connection")
