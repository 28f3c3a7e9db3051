"""What makes a decoded JSON object a Chat Completions stream chunk (translation.chunk_shape,
checked only once a reader failed on a chunk): every chunk the fake upstream's scenarios
stream is one, each way off shape is named, and a value a reader keeps without reading it
fails its chunk where it is taken (both workers' readers). Pure."""
import pytest

from responses_app.translation.chunk_shape import chunk_problem, usage_problem
from tests.upstream_scenarios import SCENARIOS


def test_every_scenario_chunk_is_of_the_shape():
    chunks = [chunk for scenario in SCENARIOS.values() for chunk in scenario.chunks]
    assert len(chunks) > 50
    assert [chunk for chunk in chunks if chunk_problem(chunk) is not None] == []


@pytest.mark.parametrize("chunk", [
    {}, {"choices": None}, {"choices": []}, {"choices": [{}]},
    {"choices": [{"index": 0, "delta": None, "finish_reason": None, "logprobs": None}]},
    {"choices": [{"delta": {"content": None, "tool_calls": None}}]},
    {"choices": [{"delta": {"tool_calls": [{"function": None}]}}]},
    {"choices": [{"logprobs": {"content": None}}]},
    {"choices": [], "usage": None}, {"choices": [], "usage": {}},
    {"usage": {"prompt_tokens": 3, "prompt_tokens_details": None,
               "completion_tokens_details": {"reasoning_tokens": None, "audio_tokens": "x"}}},
])
def test_absent_and_null_are_of_the_shape(chunk):
    assert chunk_problem(chunk) is None


@pytest.mark.parametrize("chunk, problem", [
    ([], "the chunk is not an object"),
    ({"choices": 5}, "`choices` is not an array"),
    ({"choices": {"0": {}}}, "`choices` is not an array"),
    ({"choices": [5]}, "a choice is not an object"),
    ({"choices": [{"index": "0"}]}, "a choice's `index` is not an integer"),
    ({"choices": [{"index": True}]}, "a choice's `index` is not an integer"),
    ({"choices": [{"finish_reason": ["stop"]}]}, "a choice's `finish_reason` is not a string"),
    ({"choices": [{"logprobs": {"content": 5}}]},
     "a choice's `logprobs` is not an object with a `content` array"),
    ({"choices": [{"delta": "x"}]}, "a choice's `delta` is not an object"),
    ({"choices": [{"delta": {"content": 5}}]}, "a delta's `content` is not a string"),
    ({"choices": [{"delta": {"reasoning": ["x"]}}]}, "a delta's `reasoning` is not a string"),
    ({"choices": [{"delta": {"tool_calls": 7}}]}, "a delta's `tool_calls` is not an array"),
    ({"choices": [{"delta": {"tool_calls": [7]}}]}, "a tool call is not an object"),
    ({"choices": [{"delta": {"tool_calls": [{"index": "a"}]}}]},
     "a tool call's `index` is not an integer"),
    ({"choices": [{"delta": {"tool_calls": [{"id": 1}]}}]},
     "a tool call's `id` or `type` is not a string"),
    ({"choices": [{"delta": {"tool_calls": [{"function": "f"}]}}]},
     "a tool call's `function` is not an object of a name and arguments"),
    ({"choices": [{"delta": {"tool_calls": [{"function": {"arguments": {}}}]}}]},
     "a tool call's `function` is not an object of a name and arguments"),
    ({"choices": [], "usage": 5}, "`usage` is not an object"),
    ({"choices": [], "usage": {"prompt_tokens": "3"}},
     "`usage.prompt_tokens` is not a count of tokens"),
    ({"usage": {"prompt_tokens_details": {"cached_tokens": 1.5}}},
     "`usage.prompt_tokens_details.cached_tokens` is not a count of tokens"),
    ({"usage": {"completion_tokens_details": []}},
     "`usage.completion_tokens_details.reasoning_tokens` is not a count of tokens"),
    ({"usage": 5, "choices": [5]}, "`usage` is not an object"),  # the first problem
])
def test_each_way_off_shape_is_named(chunk, problem):
    assert chunk_problem(chunk) == problem


def test_a_usage_is_checked_alone():
    assert usage_problem({"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17,
                          "completion_tokens_details": {"reasoning_tokens": 0},
                          "prompt_tokens_details": {"cached_tokens": 4}}) is None
    assert usage_problem(["x"]) == "`usage` is not an object"


def _call(index, arguments="{}", call_id="call_a", name="look") -> dict:
    return {"index": index, "id": call_id, "type": "function",
            "function": {"name": name, "arguments": arguments}}


KEPT_OFF_SHAPE = [  # values a reader keeps: nothing failed on them as they came
    {"choices": [{"index": 0, "delta": {"content": 5}}]},
    {"choices": [{"index": 0, "delta": {"reasoning_content": ["x"]}}]},
    {"choices": [{"index": 0, "delta": {"refusal": {"text": "no"}}}]},
    {"choices": [{"index": 0, "delta": {"tool_calls": [_call(0, arguments=5)]}}]},
    {"choices": [{"index": 0, "delta": {"tool_calls": [_call(0, name=7)]}}]},
    {"choices": [{"index": 0, "delta": {"tool_calls": [_call(0, call_id=7)]}}]},
    {"choices": [{"index": 0, "delta": {"tool_calls": [_call("1")]}}]},
    {"choices": [{"index": 0, "delta": {}, "finish_reason": 5}]},
    {"choices": [{"index": 0, "delta": {}, "finish_reason": ["stop"]}]},
    {"choices": [{"index": "0", "delta": {"content": "x"}}]},
]


@pytest.mark.parametrize("chunk", KEPT_OFF_SHAPE)
def test_a_value_kept_off_shape_fails_its_chunk_as_it_is_taken(chunk):
    """Both readers raise on the chunk itself (no event of it made), and the chunk is off
    shape: the stream fails as malformed, not at its end."""
    from chat_completions.worker.completion import Completion
    from responses_app.worker.chunk_batches import SHAPE_ERRORS
    from tests.test_call_usages import compacted_translator

    translator, events = compacted_translator(), []
    with pytest.raises(SHAPE_ERRORS):
        translator.feed(chunk, events)
    assert events == []
    with pytest.raises(SHAPE_ERRORS):
        Completion("chatcmpl-1", "m", 0).feed(chunk)
    assert chunk_problem(chunk) is not None


def test_null_indexes_are_taken_as_absent():
    """A null choice index is the first choice's; a null call index, its position in its
    chunk (the state machine's reading of an absent one)."""
    from tests.test_call_usages import compacted_translator

    chunks = [{"choices": [{"index": None, "delta": {"tool_calls": [_call(None, '{"a"')]}}]},
              {"choices": [{"index": None, "delta": {"tool_calls": [_call(None, ": 1}")]}}]}]
    assert [chunk_problem(chunk) for chunk in chunks] == [None, None]
    translator = compacted_translator()
    for chunk in chunks:
        translator.feed(chunk)
    translator.finish()
    assert [(i["type"], i.get("arguments")) for i in translator.response["output"]] == [
        ("compaction", None), ("function_call", '{"a": 1}')]
