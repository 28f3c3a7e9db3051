"""The worker's upstream call (responses_app/worker/upstream.py) over real HTTP, against
scripted raw servers on 127.0.0.1: streamed answers, keep-alive, retries before the first
byte, each way a connection can fail, and HTTPS verification."""
import asyncio

import orjson
import pytest

from responses_app.errors import error_body
from responses_app.worker import http_stream, upstream
from responses_app.worker.upstream import (
    NO_RETRY,
    UpstreamRejected,
    UpstreamStreamFailed,
    open_chat_stream,
)
from tests.scripted_http import (
    CHUNKED_HEAD,
    DONE,
    LAST_CHUNK,
    ScriptedServer,
    answer,
    chunk,
    self_signed_certificate,
    sse,
)
from tests.upstream_scenarios import BAD_SHAPES
from upstreams.retry_policy import RetryPolicy
from upstreams.routing import Route

BODY = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
CHUNKS = [{"choices": [{"index": 0, "delta": {"content": f"w{n} "}}]} for n in range(30)]


async def answer_all(writer):
    await answer(writer, CHUNKS)


def run(coroutine):
    async def scenario():
        try:
            return await asyncio.wait_for(coroutine, 20)
        finally:
            await upstream.close_loop_client()

    return asyncio.run(scenario())


async def streamed(route: Route, retry: RetryPolicy = NO_RETRY, busy_reader=False):
    """Every chunk the call yields, in order."""
    received = []
    async with open_chat_stream(route, BODY, 0.05, retry) as batches:
        async for batch in batches:
            received += batch
            if busy_reader:
                await asyncio.sleep(0.2)  # the rest and the end arrive meanwhile
    return received


def rejection(script, retry: RetryPolicy = NO_RETRY, **route) -> tuple[UpstreamRejected, int]:
    """The UpstreamRejected a call to a server scripted by `script` raises, and how many
    requests the server received."""
    async def scenario():
        async with ScriptedServer(script) as server:
            with pytest.raises(UpstreamRejected) as raised:
                await streamed(server.route(**route), retry)
            return raised.value, len(server.requests)

    return run(scenario())


async def chunks_before(route: Route, failure, **match) -> tuple[list[dict], Exception]:
    """The chunks the call yielded before it failed with `failure`, and the failure."""
    received = []
    with pytest.raises(failure, **match) as raised:
        async with open_chat_stream(route, BODY, 0.0) as batches:
            async for batch in batches:
                received += batch
    return received, raised.value


def test_a_streamed_answer_arrives_whole_and_the_connection_is_kept_for_the_next_call():
    async def script(reader, writer, number):
        await answer_all(writer)

    async def scenario():
        async with ScriptedServer(script) as server:
            answers = [await streamed(server.route()) for _ in range(2)]
            return answers, server.connections, server.requests

    answers, connections, requests = run(scenario())
    assert answers == [CHUNKS, CHUNKS]
    assert connections == 1
    for head, body in requests:
        lines = head.lower().split(b"\r\n")
        assert lines[0] == b"post /v1/chat/completions http/1.1"
        assert b"content-type: application/json" in lines
        assert b"accept: text/event-stream" in lines
        assert b"authorization: bearer sk-scripted" in lines
        assert orjson.loads(body) == BODY


def test_the_end_arriving_while_the_reader_is_busy_is_not_lost():
    async def script(reader, writer, number):
        writer.write(CHUNKED_HEAD + chunk(sse(CHUNKS[0])))
        await writer.drain()
        await asyncio.sleep(0.05)  # the reader has the first chunk and is busy with it
        writer.write(b"".join(chunk(sse(c)) for c in CHUNKS[1:]) + chunk(DONE) + LAST_CHUNK)

    async def scenario():
        async with ScriptedServer(script) as server:
            return await streamed(server.route(), busy_reader=True)

    assert run(scenario()) == CHUNKS


def test_a_nul_escape_split_between_two_reads_is_replaced():
    """Whether a read may hold a NUL is looked up once per read: an escape cut in two by
    the network is still found (the cut line is looked at again with the next read)."""
    nul_chunk = sse({"choices": [{"index": 0, "delta": {"content": "a\x00b"}}]})
    cut = nul_chunk.index(b"\\u0000") + 3  # ...\u00 | 00b...

    async def script(reader, writer, number):
        writer.write(CHUNKED_HEAD + chunk(sse(CHUNKS[0])) + chunk(nul_chunk[:cut]))
        await writer.drain()
        await asyncio.sleep(0.05)  # the reader takes the first piece alone
        writer.write(chunk(nul_chunk[cut:]) + chunk(DONE) + LAST_CHUNK)

    async def scenario():
        async with ScriptedServer(script) as server:
            return await streamed(server.route())

    assert run(scenario()) == [
        CHUNKS[0], {"choices": [{"index": 0, "delta": {"content": "a\ufffdb"}}]}]


def test_under_load_what_follows_the_finish_reason_is_not_held_for_a_read_interval():
    """While another answer streams on the loop, reads are paced (here once per 2 s); after
    the model's finish reason, each piece is read as it arrives (the usage chunk and the end
    are not held for an interval)."""
    finish = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    usage = {"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 2}}
    trailer = {"choices": [], "system_fingerprint": "fp"}
    other_started = other_done = None

    async def script(reader, writer, number):
        if number == 1:  # the other answer, streaming until ours is done
            writer.write(CHUNKED_HEAD + chunk(sse(CHUNKS[0])))
            await writer.drain()
            await other_done.wait()
            writer.write(chunk(DONE) + LAST_CHUNK)
            return
        writer.write(CHUNKED_HEAD + chunk(sse(CHUNKS[1])) + chunk(sse(finish)))
        await writer.drain()
        for piece in (usage, trailer):
            await asyncio.sleep(0.3)
            writer.write(chunk(sse(piece)))
            await writer.drain()
        writer.write(chunk(DONE) + LAST_CHUNK)

    async def read(route, batches_seen, started=None):
        async with open_chat_stream(route, BODY, 2.0) as batches:
            async for batch in batches:
                batches_seen.append(batch)
                if started is not None:
                    started.set()

    async def scenario():
        nonlocal other_started, other_done
        other_started, other_done = asyncio.Event(), asyncio.Event()
        async with ScriptedServer(script) as server:
            other_batches, ours = [], []
            other = asyncio.ensure_future(read(server.route(), other_batches, other_started))
            await other_started.wait()
            await read(server.route(), ours)
            other_done.set()
            await other
            return ours, other_batches

    ours, other_batches = run(scenario())
    assert ours == [[CHUNKS[1], finish], [usage], [trailer]]
    assert other_batches == [[CHUNKS[0]], []]


def test_a_close_delimited_answer_ends_with_the_connection():
    async def script(reader, writer, number):
        writer.write(b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n" + sse(CHUNKS[0]))
        await writer.drain()
        writer.write(sse(CHUNKS[1]) + DONE)
        return "close"

    async def scenario():
        async with ScriptedServer(script) as server:
            return await streamed(server.route())

    assert run(scenario()) == CHUNKS[:2]


def test_an_error_status_is_rejected_with_its_message_and_retry_after():
    error = b'{"error": {"message": "slow down"}}'

    async def script(reader, writer, number):
        writer.write(b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 3\r\n"
                     b"content-length: %d\r\n\r\n%s" % (len(error), error))

    rejected, requests = rejection(script)
    assert (rejected.status, rejected.body, rejected.headers) == (
        429, error_body("slow down", "rate_limit_exceeded", None, "rate_limit_exceeded"),
        {"Retry-After": "3"})
    assert requests == 1


def test_failures_before_the_first_byte_are_retried_as_the_policy_allows():
    async def script(reader, writer, number):
        if number == 1:
            return "close"  # closed before answering
        if number == 2:
            writer.write(b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 0\r\n"
                         b"content-length: 0\r\n\r\n")
            return None
        await answer_all(writer)

    async def scenario():
        async with ScriptedServer(script) as server:
            received = await streamed(server.route(),
                                      RetryPolicy(max_retries=2, base_delay=0.01))
            return received, [body for _, body in server.requests]

    received, bodies = run(scenario())
    assert received == CHUNKS
    assert [orjson.loads(body) for body in bodies] == [BODY] * 3


def test_a_refused_connection_is_unreachable():
    async def scenario():
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        server.close()
        await server.wait_closed()
        route = Route(name="gone", base_url=f"http://127.0.0.1:{port}/v1", api_key="",
                      connect_timeout=2.0, idle_timeout=2.0)
        with pytest.raises(UpstreamRejected) as raised:
            await streamed(route)
        return raised.value

    rejected = run(scenario())
    assert (rejected.status, rejected.body["error"]["code"]) == (502, "upstream_unreachable")
    assert rejected.body["error"]["message"].startswith(
        "The upstream model server could not be reached: ")


def test_a_server_closing_before_it_answers_is_unreachable_and_not_retried_without_a_policy():
    async def script(reader, writer, number):
        return "close"

    rejected, requests = rejection(script)
    assert (rejected.status, rejected.body["error"]["code"], requests) == (
        502, "upstream_unreachable", 1)


def test_a_server_silent_before_its_answer_times_out_and_is_not_sent_twice():
    async def script(reader, writer, number):
        await asyncio.sleep(5)  # it may be generating: resending could run it twice

    rejected, requests = rejection(script, RetryPolicy(max_retries=2, base_delay=0.01),
                                   idle_timeout=0.2)
    assert (rejected.status, rejected.body["error"]["code"], requests) == (
        504, "upstream_timeout", 1)


def test_a_connection_dropped_mid_stream_fails_after_what_arrived():
    async def script(reader, writer, number):
        writer.write(CHUNKED_HEAD + chunk(sse(CHUNKS[0])))
        await writer.drain()
        await asyncio.sleep(0.05)
        return "close"

    async def scenario():
        async with ScriptedServer(script) as server:
            return await chunks_before(server.route(), UpstreamStreamFailed)

    received, failure = run(scenario())
    assert received == CHUNKS[:1]
    assert failure.code == "server_error"
    assert failure.message.startswith("The upstream connection failed mid-stream: ")


def test_a_silent_server_times_out_while_streaming():
    async def script(reader, writer, number):
        writer.write(CHUNKED_HEAD + chunk(sse(CHUNKS[0])))
        await writer.drain()
        await asyncio.sleep(5)

    async def scenario():
        async with ScriptedServer(script) as server:
            return await chunks_before(server.route(idle_timeout=0.2), UpstreamStreamFailed)

    received, failure = run(scenario())
    assert received == CHUNKS[:1]
    assert (failure.code, failure.message) == (
        "request_timeout", "The upstream sent nothing for longer than the timeout.")


def test_a_pooled_connection_the_server_closed_is_not_reused():
    payload = sse(CHUNKS[0]) + DONE

    async def script(reader, writer, number):
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(payload), payload))
        await writer.drain()
        return "close"  # after answering, although the response said keep-alive

    async def scenario():
        async with ScriptedServer(script) as server:
            answers = []
            for _ in range(2):
                answers.append(await streamed(server.route()))
                await asyncio.sleep(0.05)  # the close reaches the client
            return answers, server.connections

    assert run(scenario()) == ([CHUNKS[:1], CHUNKS[:1]], 2)


def test_an_https_upstream_is_verified_and_streamed(tmp_path, monkeypatch):
    import ssl

    cert_path, key_path = self_signed_certificate(tmp_path)
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.load_cert_chain(cert_path, key_path)

    async def script(reader, writer, number):
        await answer_all(writer)
        return "close"

    async def scenario():
        async with ScriptedServer(script, ssl=server_context) as server:
            return await streamed(server.route())

    # the default trust store does not know this certificate: the connection is refused
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    http_stream._tls_context.cache_clear()
    with pytest.raises(UpstreamRejected, match="CERTIFICATE_VERIFY_FAILED") as raised:
        run(scenario())
    assert raised.value.body["error"]["code"] == "upstream_unreachable"
    # trusted (as an operator would, with SSL_CERT_FILE), it streams
    monkeypatch.setenv("SSL_CERT_FILE", str(cert_path))
    http_stream._tls_context.cache_clear()
    try:
        assert run(scenario()) == CHUNKS
    finally:
        monkeypatch.delenv("SSL_CERT_FILE")
        http_stream._tls_context.cache_clear()


# --- pushed batches: after the first, the rest handed to a callback as each read arrives ---

async def paced_answer(writer, chunks, *, end=True) -> None:
    """`chunks` one HTTP chunk each, 20 ms apart (a read each), then [DONE] and the end."""
    writer.write(CHUNKED_HEAD)
    for c in chunks:
        writer.write(chunk(sse(c)))
        await writer.drain()
        await asyncio.sleep(0.02)
    if end:
        writer.write(chunk(DONE) + LAST_CHUNK)
        await writer.drain()


async def pushed(route: Route, sink=None) -> tuple[list[dict], list[list[dict]]]:
    """The first batch pulled, then every later one pushed: (all chunks, the pushed
    batches)."""
    received, pushes = [], []

    def take(batch):
        pushes.append(batch)
        received.extend(batch)
        if sink is not None:
            sink(batch)

    async with open_chat_stream(route, BODY, 0.05) as batches:
        async for batch in batches:
            received += batch
            break
        await batches.push(take)
    return received, pushes


async def pushed_until_failure(route: Route) -> tuple[list[dict], UpstreamStreamFailed]:
    """The first batch pulled, then the rest pushed until the stream fails: (the chunks
    that arrived, the failure)."""
    received = []
    with pytest.raises(UpstreamStreamFailed) as raised:
        async with open_chat_stream(route, BODY, 0.0) as batches:
            async for batch in batches:
                received += batch
                break
            await batches.push(received.extend)
    return received, raised.value


def test_pushed_batches_arrive_whole_one_per_read_and_the_connection_is_kept():
    async def script(reader, writer, number):
        await paced_answer(writer, CHUNKS[:5])

    async def scenario():
        async with ScriptedServer(script) as server:
            answers = [await pushed(server.route()) for _ in range(2)]
            return answers, server.connections

    answers, connections = run(scenario())
    for received, pushes in answers:
        assert received == CHUNKS[:5]
        assert [c for batch in pushes for c in batch] == CHUNKS[1:5]
        assert len(pushes) >= 2  # read by read, not gathered at the end
    assert connections == 1


def test_pushing_after_the_whole_answer_came_hands_over_what_is_left():
    async def script(reader, writer, number):
        await answer(writer, CHUNKS[:3])  # all in one write: one read

    async def scenario():
        async with ScriptedServer(script) as server:
            return await pushed(server.route())

    received, _ = run(scenario())
    assert received == CHUNKS[:3]


def test_a_connection_dropped_while_pushing_fails_after_what_arrived():
    async def script(reader, writer, number):
        await paced_answer(writer, CHUNKS[:3], end=False)
        return "close"

    async def scenario():
        async with ScriptedServer(script) as server:
            return await pushed_until_failure(server.route())

    received, failure = run(scenario())
    assert received == CHUNKS[:3]
    assert failure.code == "server_error"
    assert failure.message.startswith("The upstream connection failed mid-stream: ")


def test_a_silent_server_times_out_while_pushing():
    async def script(reader, writer, number):
        await paced_answer(writer, CHUNKS[:2], end=False)
        await asyncio.sleep(5)

    async def scenario():
        async with ScriptedServer(script) as server:
            return await pushed_until_failure(server.route(idle_timeout=0.3))

    received, failure = run(scenario())
    assert received == CHUNKS[:2]
    assert (failure.code, failure.message) == (
        "request_timeout", "The upstream sent nothing for longer than the timeout.")


def test_what_the_push_callback_raises_is_raised_as_it_is_and_the_connection_dropped():
    class Refused(Exception):
        pass

    def refuse(batch):
        raise Refused(batch[0]["choices"][0]["delta"]["content"])

    async def script(reader, writer, number):
        await paced_answer(writer, CHUNKS[:4])

    async def scenario():
        async with ScriptedServer(script) as server:
            with pytest.raises(Refused) as raised:
                await pushed(server.route(), refuse)
            after = await streamed(server.route())
            return raised.value, after, server.connections

    refused, after, connections = run(scenario())
    assert str(refused) == "w1 "
    assert after == CHUNKS[:4]
    assert connections == 2  # the refused call's connection was not reused


# --- a bad chunk: the chunks before it are handed over first, however the reads split ---

BAD_LINES = {
    "not json": (b"data: {not json\n\n", "The upstream sent a malformed stream chunk."),
    "not an object": (b"data: [1]\n\n", "The upstream sent a malformed stream chunk."),
    # JSON objects of the wrong shape that the batches' own look at a read trips on (others
    # pass, for their reader to fail on: tests/test_e2e_streaming.py)
    "choices not an array": (b'data: {"choices": 5}\n\n',
                             "The upstream sent a malformed stream chunk."),
    "a choice not an object": (b'data: {"choices": [5]}\n\n',
                               "The upstream sent a malformed stream chunk."),
    "an error": (b'data: {"error": {"message": "overloaded"}}\n\n',
                 "The upstream failed: overloaded"),
    # JSON orjson reads but could not write back (before, the run writing it crashed)
    "nested too deep": (b"data: " + BAD_SHAPES["unknown-deep"] + b"\n\n",
                        "The upstream sent a malformed stream chunk."),
}


def writing(*writes: bytes):
    """A script writing each of `writes` (SSE bytes) as one HTTP chunk in one write, 50 ms
    apart, then a chunk the client must not get, [DONE] and the end."""
    async def script(reader, writer, number):
        writer.write(CHUNKED_HEAD)
        for data in writes:
            writer.write(chunk(data))
            await writer.drain()
            await asyncio.sleep(0.05)
        writer.write(chunk(sse(CHUNKS[9]) + DONE) + LAST_CHUNK)
        await writer.drain()
        return "close"

    return script


def reads_ending_bad(bad: bytes, split: str) -> list[bytes]:
    """CHUNKS[:3] then `bad`: all in one write, the first chunk alone then the rest in one,
    or the bad chunk alone after the rest."""
    good = [sse(c) for c in CHUNKS[:3]]
    return {"one write": [b"".join(good) + bad],
            "first alone": [good[0], b"".join(good[1:]) + bad],
            "bad alone": [b"".join(good), bad]}[split]


SPLITS = ["one write", "first alone", "bad alone"]


@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("bad", sorted(BAD_LINES))
def test_iterated_a_bad_chunk_fails_after_every_chunk_before_it(bad, split):
    """Before, a bad chunk failed its whole read: with the chunks before it in the same
    read ("one write"), none of them reached the caller."""
    line, message = BAD_LINES[bad]

    async def scenario():
        async with ScriptedServer(writing(*reads_ending_bad(line, split))) as server:
            return await chunks_before(server.route(), UpstreamStreamFailed)

    received, failure = run(scenario())
    assert received == CHUNKS[:3]
    assert (failure.code, failure.message) == ("server_error", message)


@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("bad", sorted(BAD_LINES))
def test_pushed_a_bad_chunk_fails_after_every_chunk_before_it(bad, split):
    """The first batch pulled, the rest pushed (as the runs do once their first delta is
    out): the same chunks and failure, whether the bad chunk ended the pulled batch ("one
    write": push raises it at once) or a pushed one."""
    line, message = BAD_LINES[bad]

    async def scenario():
        async with ScriptedServer(writing(*reads_ending_bad(line, split))) as server:
            return await pushed_until_failure(server.route())

    received, failure = run(scenario())
    assert received == CHUNKS[:3]
    assert (failure.code, failure.message) == ("server_error", message)
