"""The worker's text lane (worker/text_lane.py, translation/text_lane.py): a read that is one
whole event adding text to the open output text part goes to the bus in a few calls; every
other read goes the general way. The lane must not change one byte of what a run writes:
the same reads, fed through a run's streaming with the lane and without it, give the same
entries (numbers, event bytes, end), the same pacing of the upstream read and the same
response. No database, no network: the reads are handed to the real `ChunkBatches` and
`Streaming._translated` by a stand-in for the HTTP response.
"""
import asyncio
import itertools
import json

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from responses_app.bus.entries import Entry, stamped_entry
from responses_app.translation.numbering import EventStamper
from responses_app.translation.state_machine import ResponseTranslator, TranslatorOptions
from responses_app.translation.text_lane import TextLane
from responses_app.worker.chunk_batches import ChunkBatches, UpstreamStreamFailed
from responses_app.worker.run_streaming import Streaming
from responses_app.worker.text_lane import lone_chunk, run_lane
from tests.invariants import check_stream
from tests.upstream_scenarios import BAD_SHAPES

ABSENT = object()  # a key left out of the chunk


class Reads:
    """The HTTP response's side `ChunkBatches` uses: the body as the given reads, pulled
    (`batches`) or pushed (`deliver`), and its pacing, logged."""

    def __init__(self, reads):
        self.reads = list(reads)
        self.paced = False
        self.pacing = []  # ("pace" | "unpace", reads left)

    def pace(self):
        self.paced = True
        self.pacing.append(("pace", len(self.reads)))

    def unpace(self):
        self.paced = False
        self.pacing.append(("unpace", len(self.reads)))

    async def batches(self, read_interval=0.0):
        while self.reads:
            yield self.reads.pop(0)

    async def deliver(self, sink, read_interval=0.0):
        while self.reads:
            if sink(self.reads.pop(0)):
                return


class Recorded:
    """A run's bus writer that keeps what it is given, in order."""

    def __init__(self):
        self.entries = []

    async def append(self, entry, urgent=False, soon=False):
        self.entries.append(entry)

    def put(self, entry):
        self.entries.append(entry)


class WithoutLane:
    """The batches of a run that has no lane: the general path alone."""

    def __init__(self, batches):
        self.batches = batches

    def __aiter__(self):
        return self.batches.__aiter__()

    async def push(self, sink, lane=None):
        await self.batches.push(sink)


class CountedLane:
    """The batches, their lane's takes counted."""

    def __init__(self, batches):
        self.batches, self.taken = batches, 0

    def __aiter__(self):
        return self.batches.__aiter__()

    async def push(self, sink, lane):
        def counted(chunk):
            took = lane(chunk)
            self.taken += took
            return took
        await self.batches.push(sink, counted)


def new_run(include_logprobs=False, reasoning_as_summary=False) -> Streaming:
    counter = itertools.count()
    run = Streaming.__new__(Streaming)  # the streaming phase without its job and claim
    run.translator = ResponseTranslator(
        {"id": "resp_1", "object": "response", "output": [], "status": "queued"},
        TranslatorOptions(ids=lambda prefix: f"{prefix}_{next(counter)}", now=lambda: 1700,
                          include_logprobs=include_logprobs,
                          reasoning_as_summary=reasoning_as_summary))
    run.stamper = EventStamper()
    run.writer = Recorded()
    run.first_delta_at = None
    run.stopped = None
    return run


def read_by(reads, lane: bool):
    """The fake response of `reads`, and its batches as a run reads them, with the lane
    (its takes counted) or without it."""
    response = Reads(reads)
    batches = ChunkBatches(response, 0.05)
    return response, CountedLane(batches) if lane else WithoutLane(batches)


def streamed(reads, lane: bool, **options):
    """The run's entries (its closing ones last), the pacing and the failure, if any."""
    async def scenario():
        run, (response, wrapped) = new_run(**options), read_by(reads, lane)
        failure = None
        try:
            await run._translated(wrapped)
            closing = run.translator.finish()
        except UpstreamStreamFailed as failed:
            failure = (failed.code, failed.message)
            closing = run.translator.fail(*failure)
        run.writer.put(stamped_entry(run.stamper, closing, end=True))
        return run.writer.entries, response.pacing, failure, getattr(wrapped, "taken", None)

    return asyncio.run(scenario())


def frame(chunk, encoding) -> bytes:
    if encoding == "orjson":
        return b"data: " + orjson.dumps(chunk) + b"\n\n"
    if encoding == "ascii":  # escapes for every non-ASCII character, spaces, no space after data:
        return b"data:" + json.dumps(chunk).encode() + b"\n\n"
    return b"data: " + orjson.dumps(chunk) + b"\r\n\r\n"


# --- exact cases ---------------------------------------------------------------------------

def opened_run():
    """A run whose message's output text part is open (its first delta fed)."""
    run = new_run()
    events = run.translator.start()
    run.translator.feed({"choices": [{"index": 0, "delta": {"content": "Hi"}}]}, events)
    run.stamper.stamp(events)
    return run


def test_a_plain_delta_goes_by_the_lane_as_orjson_would_write_it():
    run = opened_run()
    take = run_lane(run)
    chunk = lone_chunk(b'data: {"choices":[{"index":0,"delta":{"content":" th\\u00e9re \\""}}]}'
                       b'\n\n')
    assert take(chunk) is True
    assert run.writer.entries == [Entry(5, 5, [
        b'{"type":"response.output_text.delta","item_id":"msg_0","output_index":0,'
        b'"content_index":0,"delta":" th\xc3\xa9re \\"","logprobs":[],"sequence_number":5}'])]
    assert run.stamper.next_sequence_number == 6
    assert run.translator._segment.pieces == ["Hi", ' th\u00e9re "']


def test_reads_the_lane_leaves_to_the_general_path():
    assert lone_chunk(b'data: {"choices":[]}\n\ndata: {"choices":[]}\n\n') is None
    assert lone_chunk(b'data: {"choices":[]}\n') is None
    assert lone_chunk(b'data: {"choices":[]}\r\n\r\n') is None
    assert lone_chunk(b'data: [DONE]\n\n') is None
    assert lone_chunk(b'data: {"choices":[{"delta":{"content":"a\\u0000"}}]}\n\n') is None
    assert lone_chunk(b'data: {"error":{"message":"boom"}}\n\n') is None
    assert lone_chunk(b'data: [1]\n\n') is None
    assert lone_chunk(b'data: {"choices":\n\n') is None
    assert lone_chunk(b"data: " + BAD_SHAPES["delta-deep"] + b"\n\n") is None  # too deep
    assert lone_chunk(b': keep-alive\n\n') is None
    assert lone_chunk(b'data:{"choices":[]}\n\n') == {"choices": []}


_TEXT = {"content": "x"}
# Chunks that do more than add text to one choice's content: both lanes leave them alone
# (tests/test_chat_text_lane.py too).
NOT_ONLY_TEXT = [
    {"choices": [{"index": 0, "delta": _TEXT}], "usage": {"total_tokens": 1}},
    {"choices": [{"index": 1, "delta": _TEXT}]},
    {"choices": [{"index": 0, "delta": _TEXT}, {"index": 1, "delta": _TEXT}]},
    {"choices": [{"index": 0, "delta": _TEXT, "finish_reason": "stop"}]},
    {"choices": [{"index": 0, "delta": {"content": ""}}]},
    {"choices": [{"index": 0, "delta": {"content": 5}}]},
    {"choices": [{"index": 0, "delta": {"content": "x", "refusal": "no"}}]},
    {"choices": [{"index": 0, "delta": {"content": "x", "reasoning_content": "r"}}]},
    {"choices": [{"index": 0, "delta": {"content": "x", "reasoning": "r"}}]},
    {"choices": [{"index": 0, "delta": {"content": "x", "tool_calls": [{"index": 0}]}}]},
    {"choices": [{"index": 0, "delta": "x"}]},
    {"choices": {"index": 0}},
    {"choices": []},
]


def test_chunks_and_states_the_lane_leaves_to_the_general_path():
    run = opened_run()
    lane = TextLane(run.translator, run.stamper)
    for chunk in NOT_ONLY_TEXT:
        assert lane.stamped(chunk) is None
    assert run.stamper.next_sequence_number == 5
    assert run.translator._segment.pieces == ["Hi"]
    closed = new_run()  # no part open
    assert TextLane(closed.translator, closed.stamper).stamped(
        {"choices": [{"index": 0, "delta": _TEXT}]}) is None
    with_logprobs = new_run(include_logprobs=True)
    with_logprobs.translator.feed({"choices": [{"delta": {"content": "Hi"}}]})
    assert TextLane(with_logprobs.translator, with_logprobs.stamper).stamped(
        {"choices": [{"index": 0, "delta": _TEXT}]}) is None


def test_a_stopped_run_takes_nothing_by_the_lane():
    run = opened_run()
    run.stopped = "cancelled"
    assert run_lane(run)({"choices": [{"index": 0, "delta": {"content": "x"}}]}) is False
    assert run.writer.entries == []
    assert run.stamper.next_sequence_number == 5


def paced_answer() -> list[bytes]:
    """The reads of a model's answer: its role, five words, its finish and its usage."""
    chunks = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}]
    chunks += [{"choices": [{"index": 0, "delta": {"content": f"w{i} "}}]} for i in range(5)]
    chunks += [{"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
               {"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 5,
                                         "total_tokens": 6}}]
    return [frame(chunk, "orjson") for chunk in chunks] + [b"data: [DONE]\n\n"]


def test_a_paced_answer_goes_by_the_lane_after_its_first_delta():
    reads = paced_answer()
    with_lane = streamed(reads, lane=True)
    assert with_lane[:3] == streamed(reads, lane=False)[:3]
    assert with_lane[3] == 4  # w1..w4: w0 is the first delta, pulled
    assert with_lane[1] == [("pace", 7), ("unpace", 2)]


# --- equivalence on random streams ---------------------------------------------------------

ALPHABET = st.sampled_from(["a", "é", '"', "\\", "\x00", "😀", "\u2028", "\n", "/", "\x1f",
                           " ", "<"])
TEXT = st.one_of(st.text(alphabet=ALPHABET, max_size=6), st.text(max_size=4))
SOME_TEXT = st.one_of(st.text(alphabet=ALPHABET, min_size=1, max_size=6),
                      st.text(min_size=1, max_size=4))


def tool_piece(index, head, arguments):
    call = {"index": index, "function": {"arguments": arguments}}
    if head:
        call.update(id=f"call_{index}", type="function")
        call["function"]["name"] = "lookup"
    return {"tool_calls": [call]}


DELTAS = st.one_of(
    st.builds(lambda t: {"content": t}, TEXT),
    st.builds(lambda t: {"content": t}, TEXT),
    st.builds(lambda t: {"content": t}, TEXT),
    st.builds(lambda t: {"role": "assistant", "content": t}, TEXT),
    st.builds(lambda t: {"reasoning_content": t}, TEXT),
    st.builds(lambda t: {"reasoning": t, "content": None}, TEXT),
    st.builds(lambda t: {"refusal": t}, TEXT),
    st.builds(lambda t, c: {"content": c, "refusal": t}, TEXT, TEXT),
    st.builds(tool_piece, st.integers(0, 1), st.booleans(), TEXT),
    st.just({}), st.just(None))


def choice_of(delta, index, finish, logprobs):
    choice = {"delta": delta}
    if index is not ABSENT:
        choice["index"] = index
    if finish is not ABSENT:
        choice["finish_reason"] = finish
    if logprobs:
        choice["logprobs"] = {"content": [{"token": "t", "logprob": -0.5, "bytes": [116],
                                           "top_logprobs": []}]}
    return choice


CHOICES = st.builds(
    choice_of, DELTAS,
    st.sampled_from([ABSENT, 0, 0, 0, None, 1]),
    st.sampled_from([ABSENT] * 12 + [None, "", "stop", "length", "tool_calls"]),
    st.booleans())
USAGE = {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}


def chunk_of(choices, usage):
    chunk = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": choices}
    if usage is not ABSENT:
        chunk["usage"] = usage
    return chunk


PLAIN = st.builds(lambda text, index: chunk_of([choice_of({"content": text}, index, ABSENT,
                                                           False)], ABSENT),
                  SOME_TEXT, st.sampled_from([0, 0, ABSENT, None]))  # the lane's usual chunk
CHUNKS = st.one_of(
    PLAIN, PLAIN, PLAIN,
    st.builds(chunk_of, st.one_of(st.lists(CHOICES, min_size=1, max_size=1),
                                  st.lists(CHOICES, max_size=2)),
              st.sampled_from([ABSENT, ABSENT, ABSENT, None, USAGE])))
FRAMES = st.tuples(CHUNKS, st.sampled_from(["orjson", "orjson", "orjson", "ascii", "crlf"]))


@st.composite
def bodies(draw, framed=FRAMES):
    """The reads of a streamed answer: mostly one event each (of `framed`), some joined or
    split, a comment now and then, [DONE] (or not: cut short), a bad chunk sometimes."""
    frames = [frame(chunk, encoding) for chunk, encoding in draw(st.lists(framed, max_size=40))]
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 2]))):
        extra = draw(st.sampled_from([b": keep-alive\n\n", b": keep-alive\n\n",
                                      b'data: {"choices": [\n\n',
                                      b'data: {"error": {"message": "boom"}}\n\n']))
        frames.insert(draw(st.integers(0, len(frames))), extra)
    if draw(st.sampled_from([True] * 9 + [False])):
        frames.append(b"data: [DONE]\n\n")
    body = b"".join(frames)
    if not body:
        return []
    ends = list(itertools.accumulate(len(f) for f in frames))
    cuts = {end for end in ends if draw(st.sampled_from([True] * 5 + [False]))}  # mostly alone
    cuts |= {cut % len(body) for cut in draw(st.lists(st.integers(1), max_size=2))}
    cuts = sorted(cuts - {0, len(body)})
    return [body[i:j] for i, j in zip([0, *cuts], [*cuts, len(body)])]


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(reads=bodies(), include_logprobs=st.booleans(), reasoning_as_summary=st.booleans())
def test_the_lane_writes_what_the_general_path_writes(reads, include_logprobs,
                                                       reasoning_as_summary):
    options = dict(include_logprobs=include_logprobs, reasoning_as_summary=reasoning_as_summary)
    entries, pacing, failure, _ = streamed(reads, lane=True, **options)
    assert (entries, pacing, failure) == streamed(reads, lane=False, **options)[:3]
    events = [orjson.loads(event) for entry in entries for event in entry.events]
    assert [event["sequence_number"] for event in events] == list(range(len(events)))
    check_stream(events)  # the terminal response, the last entry's, is the run's response
