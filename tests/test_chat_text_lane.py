"""The chat run's text lane (chat_completions/worker/forwarding.py's `chat_lane`): a read
that is one whole event adding content to the first choice goes to the bus in a few calls;
every other read goes the general way. The lane must not change one byte of what a run
writes: the same reads, fed through a chat run's `_streamed` with the lane and without it,
give the same entries (numbers, bytes, end), the same pacing, the same completion to store
and the same failure. No database, no network: the reads are handed to the real
`ChunkBatches` and `ChatRun._streamed` by test_text_lane's stand-in for the HTTP response.
"""
import asyncio

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chat_completions.events import ChatStamper
from chat_completions.jobs import ChatJob
from chat_completions.worker.completion import Completion
from chat_completions.worker.forwarding import chat_lane
from chat_completions.worker.mcp import ChatMcpTools
from chat_completions.worker.run import ChatRun
from responses_app.bus.entries import Entry
from responses_app.worker.text_lane import lone_chunk
from tests.test_text_lane import (ABSENT, CHUNKS, NOT_ONLY_TEXT, SOME_TEXT, Recorded, bodies,
                                  choice_of, frame, paced_answer, read_by)

def new_run(stream=True, include_usage=False, tools=None) -> ChatRun:
    job = ChatJob(id="chatcmpl-gw", tenant_id=1, model="gw-model", created=1700,
                  created_at=1700.0, stream=stream, store=True, include_usage=include_usage,
                  metadata={}, messages=[], body={}, client_function_names=[], context={})
    run = ChatRun.__new__(ChatRun)  # the streaming of a turn, without a bus or an upstream
    run.job, run.writer, run.stamper = job, Recorded(), ChatStamper()
    run.completion = Completion(job.id, job.model, job.created)
    run.tools = ChatMcpTools(tools or {})
    run.role_sent = run.first_sent = run.cancelled = run.ended = False
    return run


def outcome(call):
    try:
        return call()
    except Exception as error:  # noqa: BLE001 - what the run would fail with, compared
        return (error.__class__.__name__, str(error), getattr(error, "code", None))


def streamed(reads, lane: bool, **options):
    """The run's entries, the pacing, the failure, the completion it would store, the
    stamper's next number, the turn's content (a tool loop's) and the lane's takes."""
    async def scenario():
        run, (response, wrapped) = new_run(**options), read_by(reads, lane)
        failure = None
        try:
            await run._streamed(wrapped)
        except Exception as error:  # noqa: BLE001 - compared
            failure = (error.__class__.__name__, str(error), getattr(error, "code", None))
        run.completion.end_turn()
        return (run.writer.entries, response.pacing, failure,
                outcome(run.completion.finished), run.stamper.next_sequence_number,
                run.completion.turn_content, getattr(wrapped, "taken", None))

    return asyncio.run(scenario())


# --- exact cases ---------------------------------------------------------------------------

def opened_run(**options):
    run = new_run(**options)
    run.completion.feed({"choices": [{"index": 0, "delta": {"role": "assistant",
                                                            "content": "Hi"}}]})
    run.stamper.next_sequence_number = 3
    return run


def test_a_plain_chunk_goes_by_the_lane_as_the_general_path_forwards_it():
    run = opened_run()
    chunk = lone_chunk(b'data: {"id":"up-1","object":"chat.completion.chunk","created":5,'
                       b'"model":"up","system_fingerprint":"fp_1","usage":null,"choices":'
                       b'[{"index":0,"delta":{"content":" th\\u00e9re \\""},"logprobs":null}]}'
                       b'\n\n')
    assert chat_lane(run)(chunk) is True
    assert run.writer.entries == [Entry(3, 3, [
        b'{"id":"chatcmpl-gw","object":"chat.completion.chunk","created":1700,'
        b'"model":"gw-model","system_fingerprint":"fp_1","choices":[{"index":0,"delta":'
        b'{"content":" th\xc3\xa9re \\""},"logprobs":null}]}'])]
    assert run.stamper.next_sequence_number == 4
    assert run.completion.finished()["choices"][0]["message"]["content"] == 'Hi th\u00e9re "'
    assert run.completion.system_fingerprint == "fp_1"
    assert run.completion.turn_content == 'Hi th\u00e9re "'


def test_a_waiting_clients_run_takes_the_content_and_writes_nothing():
    run = opened_run(stream=False)
    assert chat_lane(run)({"choices": [{"delta": {"content": "!"}}]}) is True
    assert run.writer.entries == []
    assert run.stamper.next_sequence_number == 3
    assert run.completion.finished()["choices"][0]["message"]["content"] == "Hi!"


def test_chunks_and_states_the_lane_leaves_to_the_general_path():
    run = opened_run()
    take = chat_lane(run)
    for chunk in NOT_ONLY_TEXT:
        assert take(chunk) is False
        assert chunk.get("id") is None  # not forwarded
    assert run.writer.entries == []
    assert run.stamper.next_sequence_number == 3
    assert run.completion.turn_content == "Hi"
    fresh = new_run()  # the first choice not come yet
    assert chat_lane(fresh)({"choices": [{"delta": {"content": "x"}}]}) is False
    assert fresh.completion.choices == {}
    run.cancelled = True
    assert take({"choices": [{"delta": {"content": "x"}}]}) is False
    assert run.completion.turn_content == "Hi"
    assert chat_lane(new_run(tools={"lookup": object()})) is None  # MCP tools: no lane


def test_a_paced_answer_goes_by_the_lane_after_its_first_entry():
    reads = paced_answer()
    for stream, entries in ((True, 8), (False, 1)):  # a waiting client's: `started` only
        with_lane = streamed(reads, lane=True, stream=stream, include_usage=True)
        assert with_lane[:6] == streamed(reads, lane=False, stream=stream,
                                         include_usage=True)[:6]
        assert with_lane[6] == 4  # w1..w4: the role chunk is pulled, w0 paces the read
        assert with_lane[1] == [("pace", 7), ("unpace", 2)]
        assert with_lane[3]["choices"][0]["message"]["content"] == "w0 w1 w2 w3 w4 "
        assert len(with_lane[0]) == entries


def test_a_chunk_orjson_cannot_write_fails_the_run_as_a_malformed_one():
    """With the lane or without, the chunks before it out, then the malformed chunk's
    failure (chunk_batches); before, writing it raised TypeError: the run crashed."""
    deep = b"[" * 300 + b"]" * 300  # read by orjson, but too deep for it to write again
    chunks = [{"choices": [{"delta": {"role": "assistant", "content": "a"}}]},
              {"choices": [{"delta": {"content": "b"}}]}]
    reads = [frame(chunk, "orjson") for chunk in chunks] + [
        b'data: {"choices":[{"delta":{"content":"c"},"logprobs":%b}]}\n\n' % deep,
        b'data: {"choices":[{"delta":{"content":"d"}}]}\n\n', b"data: [DONE]\n\n"]
    with_lane = streamed(reads, lane=True)
    assert with_lane[:6] == streamed(reads, lane=False)[:6]
    assert [entry.events for entry in with_lane[0]] == [
        [b'{"choices":[{"delta":{"role":"assistant","content":"a"}}],"id":"chatcmpl-gw",'
         b'"model":"gw-model","created":1700}'],
        [b'{"choices":[{"delta":{"content":"b"}}],"id":"chatcmpl-gw","model":"gw-model",'
         b'"created":1700}']]
    assert with_lane[2] == ("UpstreamStreamFailed", "The upstream sent a malformed stream "
                                                    "chunk.", "server_error")
    assert with_lane[4] == 2  # no number taken for c
    assert with_lane[6] == 1  # b (a paced the read); c left to the general path


# --- equivalence on random streams ---------------------------------------------------------

HEADS = [{"id": "up-1", "object": "chat.completion.chunk"}, {},
         {"id": "up-1", "object": "chat.completion.chunk", "created": 5, "model": "up"}]


def chat_chunk(text, index, fingerprint, usage, logprobs, role, head):
    delta = {"role": "assistant", "content": text} if role else {"content": text}
    chunk = {**head, "choices": [choice_of(delta, index, ABSENT, logprobs)]}
    if usage is not ABSENT:
        chunk["usage"] = usage
    if fingerprint is not ABSENT:
        chunk["system_fingerprint"] = fingerprint
    return chunk


PLAIN = st.builds(chat_chunk, st.one_of(SOME_TEXT, SOME_TEXT, SOME_TEXT, st.just("")),
                  st.sampled_from([0, 0, ABSENT, None, False]),
                  st.sampled_from([ABSENT, ABSENT, None, "", "fp_1", "fp_2"]),
                  st.sampled_from([ABSENT, ABSENT, None, {}, 0, {"total_tokens": "3"},
                                   {"prompt_tokens": 2, "completion_tokens": 1,
                                    "total_tokens": 3}]), st.booleans(),
                  st.sampled_from([False] * 5 + [True]), st.sampled_from(HEADS))
CHAT_FRAMES = st.tuples(st.one_of(PLAIN, PLAIN, PLAIN, CHUNKS),
                        st.sampled_from(["orjson", "orjson", "orjson", "ascii", "crlf"]))


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(reads=bodies(CHAT_FRAMES), stream=st.sampled_from([True, True, True, False]),
       include_usage=st.booleans())
def test_the_lane_writes_what_the_general_path_writes(reads, stream, include_usage):
    options = dict(stream=stream, include_usage=include_usage)
    assert streamed(reads, lane=True, **options)[:6] == \
        streamed(reads, lane=False, **options)[:6]
