"""The pure translator: recorded upstream chunk sequences → the exact Responses event stream.

Every stream here is numbered by the EventStamper, framed as SSE and judged by
`tests.oracles.check_sse_stream` (framing, both schema oracles, the invariant checker)
before its exact event list, items and usage are asserted. No database, no network.
"""
import itertools

import orjson
import pytest

from responses_app.api.framing import sse
from responses_app.create.request import parse_create_request
from responses_app.translation.chunk_shape import DEEPEST, too_deep
from responses_app.translation.resource import new_response_resource
from responses_app.translation.numbering import EventStamper
from responses_app.translation.state_machine import ResponseTranslator, TranslatorOptions
from tests.oracles import check_sse_stream
from tests.upstream_scenarios import CREATED, SCENARIOS, accumulate, text_of

NOW = 1700000100
OK_SCENARIOS = [name for name, scenario in SCENARIOS.items() if scenario.status == 200]


# --- helpers -----------------------------------------------------------------------------------

def sequential_ids():
    """A deterministic id factory: prefix_0, prefix_1, … with one counter for all prefixes."""
    counter = itertools.count()
    return lambda prefix: f"{prefix}_{next(counter)}"


def framed(stamper, events):
    """`events` numbered by `stamper`, framed as the SSE stream frames them."""
    return sse(stamper.stamp(events))


def translate(chunks, *, model="fake-text", fail=None, incomplete=None, **options):
    """start → feed every chunk → finish (`finish(incomplete)`, or fail(code, message));
    return (events, response).

    Each batch is rendered as soon as it is returned (the translator's contract: later
    calls keep mutating the items earlier events point at).
    """
    params = parse_create_request({"model": model, "input": "hi"}).params
    response = new_response_resource(
        response_id="resp_test", created_at=CREATED, model=model, params=params,
        instructions=None, previous_response_id=None, store=True, background=False,
        status="in_progress")
    translator = ResponseTranslator(
        response, TranslatorOptions(ids=sequential_ids(), now=lambda: NOW, **options))
    stamper = EventStamper()
    raw = framed(stamper, translator.start())
    for chunk in chunks:
        raw += framed(stamper, translator.feed(chunk))
    raw += framed(stamper, translator.finish(incomplete) if fail is None
                  else translator.fail(*fail))
    return check_sse_stream(raw + b"data: [DONE]\n\n")


def scenario_chunks(name):
    """The chunks a client sees: for a dropped or corrupted stream, those before the break."""
    scenario = SCENARIOS[name]
    cut = scenario.drop_after if scenario.drop_after is not None else scenario.bad_chunk_after
    return scenario.chunks if cut is None else scenario.chunks[:cut]


def run_scenario(name, **options):
    scenario = SCENARIOS[name]
    broken = scenario.drop_after is not None or scenario.bad_chunk_after is not None
    fail = ("server_error", "The upstream connection was lost.") if broken else None
    return translate(scenario_chunks(name), model=name, fail=fail, **options)


def types_of(events):
    return [event["type"] for event in events]


def item_ids_by_output_index(events):
    """output_index → the set of item ids every event about that output index names."""
    ids = {}
    for event in events:
        if "output_index" not in event:
            continue
        item_id = event["item"]["id"] if "item" in event else event["item_id"]
        ids.setdefault(event["output_index"], set()).add(item_id)
    return ids


def call_ids_by_event(events):
    """(event type, item id, call_id) of every event carrying a function_call item."""
    return [(event["type"], event["item"]["id"], event["item"]["call_id"])
            for event in events if event.get("item", {}).get("type") == "function_call"]


def text_message(item_id, text, status="completed"):
    return {"id": item_id, "type": "message", "status": status, "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}]}


def function_call(item_id, call_id, name, arguments, status="completed"):
    return {"id": item_id, "type": "function_call", "status": status, "arguments": arguments,
            "call_id": call_id, "name": name}


def usage(input_tokens, output_tokens, cached=0, reasoning=0):
    return {"input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": reasoning},
            "total_tokens": input_tokens + output_tokens}


def chunk(delta, finish_reason=None, logprobs=None):
    return {"id": "chatcmpl-inline", "object": "chat.completion.chunk", "created": CREATED,
            "model": "inline",
            "choices": [{"index": 0, "delta": delta, "logprobs": logprobs,
                         "finish_reason": finish_reason}]}


def usage_chunk(prompt, completion):
    return {"id": "chatcmpl-inline", "object": "chat.completion.chunk", "created": CREATED,
            "model": "inline", "choices": [],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                      "total_tokens": prompt + completion}}


# --- exact event lists, one per scenario ---------------------------------------------------------

TEXT_5_DELTAS = [
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.content_part.added",
    "response.output_text.delta",
    "response.output_text.delta",
    "response.output_text.delta",
    "response.output_text.delta",
    "response.output_text.delta",
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
    "response.completed",
]


def reasoning_then_text(reasoning_deltas: int) -> list[str]:
    """A reasoning item of `reasoning_deltas` deltas, then a message of two text deltas."""
    return [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        *["response.reasoning_text.delta"] * reasoning_deltas,
        "response.reasoning_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]


EXPECTED_TYPES = {
    "fake-text": TEXT_5_DELTAS,
    "fake-slow": TEXT_5_DELTAS,
    # the NUL is the upstream reader's to replace: the machine sees text
    "fake-nul": reasoning_then_text(reasoning_deltas=1),
    "fake-reasoning": reasoning_then_text(reasoning_deltas=4),
    "fake-tools": [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ],
    "fake-tool-one-piece": [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.output_item.added",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ],
    # The message closes when the call starts (PROTOCOL: one item done before the next).
    "fake-text-then-tool": [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ],
    "fake-refusal": [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.refusal.delta",
        "response.refusal.delta",
        "response.refusal.delta",
        "response.refusal.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ],
    "fake-length": [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.incomplete",
    ],
    "fake-json": [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ],
    "fake-drop": [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.failed",
    ],
    "fake-bad-chunk": [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.failed",
    ],
}

def test_every_ok_scenario_has_an_expected_event_list():
    assert sorted(EXPECTED_TYPES) == sorted(OK_SCENARIOS)


@pytest.mark.parametrize("name", sorted(EXPECTED_TYPES))
def test_it_emits_the_exact_event_types(name):
    events, _ = run_scenario(name)

    assert types_of(events) == EXPECTED_TYPES[name]


@pytest.mark.parametrize("name", OK_SCENARIOS)
def test_it_numbers_events_0_to_n_and_ends_with_the_done_items(name):
    events, response = run_scenario(name)

    assert [event["sequence_number"] for event in events] == list(range(len(events)))
    done_items = [event["item"] for event in events
                  if event["type"] == "response.output_item.done"]
    assert response["output"] == done_items
    assert events[-1]["response"] is not None
    assert events[-1]["response"]["output"] == done_items


# --- text -------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["fake-text", "fake-slow"])
def test_it_streams_plain_text(name):
    events, response = run_scenario(name)

    assert [e["delta"] for e in events if e["type"] == "response.output_text.delta"] == [
        "Hello", ", world", "!", " How can I", " help?"]
    assert text_of(SCENARIOS[name]) == "Hello, world! How can I help?"
    assert response["output"] == [text_message("msg_0", "Hello, world! How can I help?")]
    assert response["status"] == "completed"
    assert response["completed_at"] == NOW
    assert response["incomplete_details"] is None
    assert response["error"] is None
    assert item_ids_by_output_index(events) == {0: {"msg_0"}}


def test_it_streams_json_text_unchanged():
    events, response = run_scenario("fake-json")

    assert response["output"] == [text_message("msg_0", '{"answer": 42}')]
    assert text_of(SCENARIOS["fake-json"]) == '{"answer": 42}'


def test_the_created_event_carries_an_in_progress_response_with_no_output():
    events, _ = run_scenario("fake-text")

    created = events[0]["response"]
    assert (created["id"], created["status"], created["output"], created["usage"],
            created["completed_at"]) == ("resp_test", "in_progress", [], None, None)
    assert events[1]["response"]["status"] == "in_progress"


def test_the_added_message_is_an_empty_scaffold():
    events, _ = run_scenario("fake-text")

    assert events[2]["item"] == {"id": "msg_0", "type": "message", "status": "in_progress",
                                 "role": "assistant", "content": []}
    assert events[3]["part"] == {"type": "output_text", "text": "", "annotations": [],
                                 "logprobs": []}


# --- reasoning ----------------------------------------------------------------------------------

def test_it_streams_reasoning_then_text():
    events, response = run_scenario("fake-reasoning")

    assert response["output"] == [
        {"id": "rs_0", "type": "reasoning", "status": "completed", "summary": [],
         "content": [{"type": "reasoning_text", "text": "Let me think. The user greets me."}]},
        text_message("msg_1", "Hi there!"),
    ]
    assert accumulate(SCENARIOS["fake-reasoning"])["reasoning_content"] == (
        "Let me think. The user greets me.")
    assert item_ids_by_output_index(events) == {0: {"rs_0"}, 1: {"msg_1"}}


def test_reasoning_as_summary_streams_summary_events():
    events, response = run_scenario("fake-reasoning", reasoning_as_summary=True)

    assert types_of(events) == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.done",
        "response.reasoning_summary_part.done",
        "response.output_item.done",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert response["output"] == [
        {"id": "rs_0", "type": "reasoning", "status": "completed",
         "summary": [{"type": "summary_text", "text": "Let me think. The user greets me."}],
         "content": []},
        text_message("msg_1", "Hi there!"),
    ]
    assert [e["summary_index"] for e in events
            if e["type"].startswith("response.reasoning_summary_")] == [0, 0, 0, 0, 0, 0, 0]


# --- function calls -------------------------------------------------------------------------------

def test_it_streams_two_interleaved_calls():
    events, response = run_scenario("fake-tools")

    assert response["output"] == [
        function_call("fc_0", "call_abc", "get_weather", '{"city": "Paris"}'),
        function_call("fc_1", "call_def", "get_time", '{"tz": "Europe/Paris"}'),
    ]
    assert [(e["item_id"], e["delta"]) for e in events
            if e["type"] == "response.function_call_arguments.delta"] == [
        ("fc_0", '{"city"'), ("fc_1", '{"tz": '), ("fc_0", ': "Par'),
        ("fc_1", '"Europe/'), ("fc_0", 'is"}'), ("fc_1", 'Paris"}')]
    assert [(e["item_id"], e["output_index"], e["arguments"], e["name"]) for e in events
            if e["type"] == "response.function_call_arguments.done"] == [
        ("fc_0", 0, '{"city": "Paris"}', "get_weather"),
        ("fc_1", 1, '{"tz": "Europe/Paris"}', "get_time")]
    assert call_ids_by_event(events) == [
        ("response.output_item.added", "fc_0", "call_abc"),
        ("response.output_item.added", "fc_1", "call_def"),
        ("response.output_item.done", "fc_0", "call_abc"),
        ("response.output_item.done", "fc_1", "call_def"),
    ]
    assert item_ids_by_output_index(events) == {0: {"fc_0"}, 1: {"fc_1"}}
    assert [(c["id"], c["function"]["arguments"]) for c in
            accumulate(SCENARIOS["fake-tools"])["tool_calls"]] == [
        ("call_abc", '{"city": "Paris"}'), ("call_def", '{"tz": "Europe/Paris"}')]


def test_the_added_call_has_empty_arguments():
    events, _ = run_scenario("fake-tools")

    assert [e["item"] for e in events if e["type"] == "response.output_item.added"] == [
        function_call("fc_0", "call_abc", "get_weather", "", status="in_progress"),
        function_call("fc_1", "call_def", "get_time", "", status="in_progress"),
    ]


def test_a_call_in_one_piece_and_a_zero_argument_call_get_arguments_done():
    events, response = run_scenario("fake-tool-one-piece")

    assert response["output"] == [
        function_call("fc_0", "call_one", "lookup", '{"q": "x"}'),
        function_call("fc_1", "call_two", "ping", ""),
    ]
    assert [(e["item_id"], e["arguments"], e["name"]) for e in events
            if e["type"] == "response.function_call_arguments.done"] == [
        ("fc_0", '{"q": "x"}', "lookup"), ("fc_1", "", "ping")]
    assert [(e["item_id"], e["delta"]) for e in events
            if e["type"] == "response.function_call_arguments.delta"] == [
        ("fc_0", '{"q": "x"}')]


def test_a_call_without_an_upstream_id_gets_a_generated_call_id():
    chunks = [
        chunk({"role": "assistant", "content": ""}),
        chunk({"tool_calls": [{"index": 0, "type": "function",
                               "function": {"name": "ping", "arguments": ""}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}),
        chunk({}, "tool_calls"),
    ]

    events, response = translate(chunks)

    assert response["output"] == [function_call("fc_0", "call_1", "ping", "{}")]
    assert call_ids_by_event(events) == [
        ("response.output_item.added", "fc_0", "call_1"),
        ("response.output_item.done", "fc_0", "call_1"),
    ]


def test_text_then_a_call_gives_a_message_then_the_call():
    events, response = run_scenario("fake-text-then-tool")

    assert response["output"] == [
        text_message("msg_0", "Let me check."),
        function_call("fc_1", "call_oslo", "get_weather", '{"city":"Oslo"}'),
    ]
    assert item_ids_by_output_index(events) == {0: {"msg_0"}, 1: {"fc_1"}}
    assert response["status"] == "completed"


def test_a_namespaced_call_is_mapped_back_to_its_name_and_namespace():
    chunks = [
        chunk({"role": "assistant", "content": ""}),
        chunk({"tool_calls": [{"index": 0, "id": "call_ns", "type": "function",
                               "function": {"name": "ns__tool", "arguments": '{"a": 1}'}}]}),
        chunk({}, "tool_calls"),
    ]

    events, response = translate(chunks, function_names={"ns__tool": ("tool", "ns")})

    expected = {**function_call("fc_0", "call_ns", "tool", '{"a": 1}'), "namespace": "ns"}
    assert response["output"] == [expected]
    assert [e["item"] for e in events if e["type"] == "response.output_item.added"] == [
        {**function_call("fc_0", "call_ns", "tool", "", status="in_progress"), "namespace": "ns"}]
    assert [(e["name"], e["arguments"]) for e in events
            if e["type"] == "response.function_call_arguments.done"] == [("tool", '{"a": 1}')]


def test_an_unmapped_call_name_is_kept_without_namespace():
    chunks = [
        chunk({"tool_calls": [{"index": 0, "id": "call_plain", "type": "function",
                               "function": {"name": "plain", "arguments": "{}"}}]}),
        chunk({}, "tool_calls"),
    ]

    _, response = translate(chunks, function_names={"ns__tool": ("tool", "ns")})

    assert response["output"] == [function_call("fc_0", "call_plain", "plain", "{}")]


# --- refusal, length ------------------------------------------------------------------------------

def test_it_streams_a_refusal_part():
    events, response = run_scenario("fake-refusal")

    assert response["output"] == [
        {"id": "msg_0", "type": "message", "status": "completed", "role": "assistant",
         "content": [{"type": "refusal", "refusal": "I can't help with that."}]}]
    assert [e["refusal"] for e in events if e["type"] == "response.refusal.done"] == [
        "I can't help with that."]
    assert [e["part"] for e in events if e["type"] == "response.content_part.added"] == [
        {"type": "refusal", "refusal": ""}]


def test_finish_reason_length_makes_the_response_incomplete():
    events, response = run_scenario("fake-length")

    assert response["status"] == "incomplete"
    assert response["incomplete_details"] == {"reason": "max_output_tokens"}
    assert response["output"] == [
        text_message("msg_0", "The answer is long and", status="incomplete")]
    assert [e["item"]["status"] for e in events
            if e["type"] == "response.output_item.done"] == ["incomplete"]
    assert response["completed_at"] == NOW
    assert response["error"] is None


def test_a_steered_response_ends_incomplete_with_what_it_streamed():
    events, response = translate(SCENARIOS["fake-text"].chunks[:3], incomplete="steered")

    assert types_of(events)[-4:] == [
        "response.output_text.done", "response.content_part.done",
        "response.output_item.done", "response.incomplete"]
    assert response["status"] == "incomplete"
    assert response["incomplete_details"] == {"reason": "steered"}
    assert response["output"] == [text_message("msg_0", "Hello, world", status="incomplete")]
    assert response["completed_at"] == NOW


@pytest.mark.parametrize("name, cut, streaming", [
    ("fake-text", 3, False), ("fake-tools", 3, True), ("fake-text-then-tool", 3, False),
    ("fake-text-then-tool", 4, True)])
def test_a_streaming_client_call_is_seen(name, cut, streaming):
    params = parse_create_request({"model": name, "input": "hi"}).params
    translator = ResponseTranslator(
        new_response_resource(response_id="resp_test", created_at=CREATED, model=name,
                              params=params, instructions=None, previous_response_id=None,
                              store=True, background=False, status="in_progress"),
        TranslatorOptions(ids=sequential_ids(), now=lambda: NOW))
    translator.start()
    for chunk in SCENARIOS[name].chunks[:cut]:
        translator.feed(chunk)
    assert translator.streams_client_call is streaming


# --- usage --------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, expected", [
    ("fake-text", usage(12, 5, cached=4)),
    ("fake-reasoning", usage(12, 10, reasoning=4)),
    ("fake-tools", usage(12, 8)),
    ("fake-tool-one-piece", usage(12, 2)),
    ("fake-text-then-tool", usage(12, 5)),
    ("fake-refusal", usage(12, 3)),
    ("fake-length", usage(12, 3)),
    ("fake-json", usage(12, 4)),
    ("fake-slow", usage(12, 5)),
    ("fake-drop", None),
    ("fake-bad-chunk", None),
])
def test_usage_is_mapped_exactly(name, expected):
    _, response = run_scenario(name)

    assert response["usage"] == expected


def test_usage_without_details_counts_zero_cached_and_reasoning_tokens():
    chunks = [chunk({"content": "ok"}), chunk({}, "stop"), usage_chunk(7, 1)]

    _, response = translate(chunks)

    assert response["usage"] == usage(7, 1)


# --- logprobs -------------------------------------------------------------------------------------

LOGPROB_HEL = {"token": "Hel", "logprob": -0.25, "bytes": [72, 101, 108],
               "top_logprobs": [{"token": "Hel", "logprob": -0.25, "bytes": [72, 101, 108]}]}
LOGPROB_LO = {"token": "lo", "logprob": -0.5, "bytes": [108, 111],
              "top_logprobs": [{"token": "lo", "logprob": -0.5, "bytes": [108, 111]}]}
LOGPROB_CHUNKS = [
    chunk({"role": "assistant", "content": ""}),
    chunk({"content": "Hel"}, logprobs={"content": [LOGPROB_HEL]}),
    chunk({"content": "lo"}, logprobs={"content": [LOGPROB_LO]}),
    chunk({}, "stop"),
    usage_chunk(3, 2),
]


def test_include_logprobs_passes_them_through():
    events, response = translate(LOGPROB_CHUNKS, include_logprobs=True)

    assert [e["logprobs"] for e in events if e["type"] == "response.output_text.delta"] == [
        [LOGPROB_HEL], [LOGPROB_LO]]
    assert [e["logprobs"] for e in events if e["type"] == "response.output_text.done"] == [
        [LOGPROB_HEL, LOGPROB_LO]]
    assert [e["part"]["logprobs"] for e in events
            if e["type"] == "response.content_part.done"] == [[LOGPROB_HEL, LOGPROB_LO]]
    assert response["output"][0]["content"] == [
        {"type": "output_text", "text": "Hello", "annotations": [],
         "logprobs": [LOGPROB_HEL, LOGPROB_LO]}]


def _nested(levels: int):
    """A value `levels` arrays deep."""
    value = 1
    for _ in range(levels):
        value = [value]
    return value


def _depth(value) -> int:
    """How many levels of arrays and objects `value` nests."""
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


def test_a_chunk_nested_as_deep_as_a_chunk_may_is_written_in_every_event():
    """orjson writes 254 levels (it reads 1024); a logprob nests two levels deeper in
    `response.completed` than in its chunk (6 -> 8): a chunk DEEPEST (252) levels deep,
    in a logprob, is translated and each of its events written; one level deeper, writing
    them fails, and `too_deep` says so (the chunk is malformed as it is decoded:
    chunk_batches; tests/test_e2e_streaming.py's fake-bad-shape-*-deep)."""
    assert (len(orjson.dumps(_nested(254))), DEEPEST) == (509, 252)
    with pytest.raises(TypeError, match="Recursion limit reached"):
        orjson.dumps(_nested(255))

    def with_deep_logprob(depth: int) -> tuple[list[dict], dict]:
        entry = {**LOGPROB_LO, "deep": _nested(depth - 6)}
        deep = chunk({"content": "lo"}, logprobs={"content": [entry]})
        assert _depth(deep) == depth
        return [*LOGPROB_CHUNKS[:2], deep, *LOGPROB_CHUNKS[3:]], entry

    chunks, entry = with_deep_logprob(DEEPEST)
    assert too_deep(chunks[2]) is False
    _, response = translate(chunks, include_logprobs=True)
    assert response["output"][0]["content"][0]["logprobs"] == [LOGPROB_HEL, entry]
    chunks, _ = with_deep_logprob(DEEPEST + 1)
    assert too_deep(chunks[2]) is True
    with pytest.raises(TypeError, match="Recursion limit reached"):
        translate(chunks, include_logprobs=True)


def test_logprobs_are_empty_unless_included():
    events, response = translate(LOGPROB_CHUNKS)

    assert [e["logprobs"] for e in events if e["type"] == "response.output_text.delta"] == [
        [], []]
    assert [e["logprobs"] for e in events if e["type"] == "response.output_text.done"] == [[]]
    assert response["output"] == [text_message("msg_0", "Hello")]


# --- failure --------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["fake-drop", "fake-bad-chunk"])
def test_fail_closes_the_open_message_as_incomplete(name):
    events, response = run_scenario(name)

    assert events[-1]["type"] == "response.failed"
    assert response["status"] == "failed"
    assert response["error"] == {"code": "server_error",
                                 "message": "The upstream connection was lost."}
    assert response["output"] == [text_message("msg_0", "Hello", status="incomplete")]
    assert response["completed_at"] is None
    assert response["incomplete_details"] is None


def test_fail_closes_open_calls_with_their_partial_arguments():
    chunks = SCENARIOS["fake-tools"].chunks[:5]

    events, response = translate(chunks, model="fake-tools", fail=("server_error", "Timed out."))

    assert types_of(events) == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.failed",
    ]
    assert response["output"] == [
        function_call("fc_0", "call_abc", "get_weather", '{"city"', status="incomplete"),
        function_call("fc_1", "call_def", "get_time", '{"tz": ', status="incomplete"),
    ]
    assert response["error"] == {"code": "server_error", "message": "Timed out."}


def test_fail_before_any_output_has_an_empty_output():
    events, response = translate([], fail=("server_error", "Upstream returned 500."))

    assert types_of(events) == ["response.created", "response.in_progress", "response.failed"]
    assert response["output"] == []
    assert response["error"] == {"code": "server_error", "message": "Upstream returned 500."}
