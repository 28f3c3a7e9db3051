"""A resume at or past the last event of a response ends at once with `[DONE]` (nothing is
left to send), whether the response had ended before the resume (its log's end lies behind
the cursor, which no read from the cursor brings) or ends while the resume waits; a
resume past the last event of a running response follows it from its last event; a
`starting_after` that is no sequence number is a 400 naming it. On the production path
(Redis Streams) and on the in-process bus of the embedded mode."""
import asyncio

import pytest

from responses_app.bus.entries import Entry
from responses_app.bus.memory import MemoryEventBus
from tests.sse import parse_sse

DONE = b"data: [DONE]\n\n"
KEEPALIVE = b": keep-alive\n\n"


def resumed_body(api, response_id: str, after, keepalives: int = 0) -> bytes:
    """The resumed stream's bytes without its keep-alives; more than `keepalives` of them
    fails (a finished response's resume has nothing to wait for; a running one's waits
    for its end, a few seconds here)."""
    chunks, waited = [], 0
    with api.stream("GET", f"/responses/{response_id}",
                    params={"stream": "true", "starting_after": after}) as answer:
        assert answer.status_code == 200
        for chunk in answer.iter_raw():
            if chunk == KEEPALIVE:
                waited += 1
                assert waited <= keepalives, chunks
            else:
                chunks.append(chunk)
    return b"".join(chunks)


def test_a_resume_at_or_past_a_finished_response_end_is_done_at_once(api):
    answer = api.post("/responses", json={"model": "fake-text", "input": "hi",
                                          "stream": True})
    events = parse_sse(answer.content).events
    last = events[-1]["sequence_number"]
    assert events[-1]["type"] == "response.completed"
    response_id = events[0]["response"]["id"]
    assert parse_sse(resumed_body(api, response_id, last - 1)).events == events[-1:]
    for after in (last, last + 1, 10**9, 2**63 - 1):
        assert resumed_body(api, response_id, after) == DONE


def test_a_resume_past_the_last_event_of_a_running_response_follows_it_to_the_end(api):
    """No client saw events not written yet: the cursor is taken as the last one written."""
    created = api.post("/responses", json={"model": "bench-20-50", "input": "hi",
                                           "background": True}).json()
    body = resumed_body(api, created["id"], 10**9, keepalives=30)
    assert body.endswith(b"data: [DONE]\n\n")
    resumed = parse_sse(body).events
    replay = parse_sse(api.get(f"/responses/{created['id']}",
                               params={"stream": "true"}).content).events
    assert resumed[-1]["type"] == "response.completed"
    assert resumed == replay[len(replay) - len(resumed):]


def test_a_resume_past_the_end_of_a_cancelled_response_is_done(api):
    created = api.post("/responses", json={"model": "bench-400-25", "input": "hi",
                                           "background": True}).json()
    assert api.post(f"/responses/{created['id']}/cancel").json()["status"] == "cancelled"
    assert resumed_body(api, created["id"], 10**9) == DONE


@pytest.mark.parametrize("value", ["18446744073709551617", "9223372036854775808", "1" * 5000,
                                   "-2", "+5", " 5", "5_0", "\u0665", "x"])
def test_a_starting_after_that_is_no_sequence_number_is_a_400(api, value):
    created = api.post("/responses", json={"model": "fake-text", "input": "hi"}).json()
    answer = api.get(f"/responses/{created['id']}",
                     params={"stream": "true", "starting_after": value})
    assert answer.status_code == 400
    assert answer.json() == {"error": {
        "message": "'starting_after' must be a sequence number (an integer from 0 to "
                   "9223372036854775807).",
        "type": "invalid_request_error", "param": "starting_after", "code": "invalid_value"}}


def test_the_in_process_bus_ends_a_resume_at_or_past_the_end():
    async def scenario():
        bus = MemoryEventBus(retention_seconds=60)
        writer = bus.writer("resp_1")
        await writer.append(Entry(0, 2, [b"a", b"b", b"c"], end=False))
        late = await bus.subscribe("resp_1", 5)  # past the last event written: from it
        await writer.append(Entry(3, 3, [b"d"], end=True))
        ended = await bus.subscribe("resp_1", 3)
        return [(e.first, e.last, e.events, e.end) for e in (await late.get(), await ended.get())]

    assert asyncio.run(scenario()) == [(3, 3, [b"d"], True), (4, 3, [], True)]
