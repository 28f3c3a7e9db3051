"""What makes a decoded JSON object a Chat Completions stream chunk (translation.chunk_shape,
checked only once a reader failed on a chunk): every chunk the fake upstream's scenarios
stream is one, and each way off shape is named. Pure."""
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
