"""The pure parts of /v1/chat/completions: the request's validation and the upstream body,
the tool-message repair, the completion's accumulation across turns, the edge framing."""
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chat_completions.events import ChatStamper, comment, events_of, sse
from chat_completions.message_repair import repair_messages
from chat_completions.request import parse_chat_create
from chat_completions.worker.completion import Completion
from responses_app.errors import InvalidRequest

USER = {"role": "user", "content": "hi"}


def test_the_upstream_body_is_the_clients_but_what_the_gateway_owns():
    create = parse_chat_create({
        "model": "m", "messages": [USER], "stream": True, "store": True,
        "stream_options": {"include_usage": False}, "metadata": {"k": "v"},
        "reasoning_effort": None, "reasoning": {"effort": None, "summary": None},
        "thinking": {"type": "enabled"}, "top_k": 3, "x_vendor": {"a": [1]}})
    assert create.body == {"model": "m", "messages": [USER], "thinking": {"type": "enabled"},
                           "top_k": 3, "x_vendor": {"a": [1]}, "stream": True,
                           "stream_options": {"include_usage": True}}
    assert (create.stream, create.store, create.include_usage, create.metadata) == (
        True, True, False, {"k": "v"})


@pytest.mark.parametrize("payload, param, message", [
    ({"messages": [USER]}, "model", "Missing required parameter: 'model'."),
    ({"model": "m", "messages": []}, "messages",
     "'messages' must be a non-empty array of messages."),
    ({"model": "m", "messages": [{"role": "robot"}]}, "messages[0].role",
     "Invalid value for 'messages[0].role': expected one of assistant, developer, function, "
     "system, tool, user."),
    ({"model": "m", "messages": [{"role": "tool", "content": "x"}]}, "messages[0].tool_call_id",
     "Missing required parameter: 'messages[0].tool_call_id'."),
    ({"model": "m", "messages": [USER], "stream_options": {"include_usage": True}},
     "stream_options", "The 'stream_options' parameter is only allowed when 'stream' is enabled."),
    ({"model": "m", "messages": [USER], "metadata": {"k": 1}}, "metadata",
     "'metadata' must be an object of at most 16 string pairs (keys up to 64 characters, "
     "values up to 512)."),
    ({"model": "m", "messages": [USER], "stream": "yes"}, "stream",
     "Invalid type for 'stream': expected a boolean."),
])
def test_bad_requests_name_their_parameter(payload, param, message):
    with pytest.raises(InvalidRequest) as refused:
        parse_chat_create(payload)
    assert (refused.value.param, str(refused.value)) == (param, message)


def call(call_id: str, name: str = "f") -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


def test_unanswered_calls_get_aborted_and_outputs_follow_their_calls():
    repaired = repair_messages([
        USER, {"role": "assistant", "content": "two calls", "tool_calls": [call("a"), call("b")]},
        {"role": "user", "content": "between"},
        {"role": "tool", "tool_call_id": "a", "content": "A"}])
    assert repaired.items == [
        USER, {"role": "assistant", "content": "two calls", "tool_calls": [call("a"), call("b")]},
        {"role": "tool", "tool_call_id": "a", "content": "A"},
        {"role": "tool", "tool_call_id": "b", "content": "aborted"},
        {"role": "user", "content": "between"}]
    assert repaired.repairs == ["missing_output", "regrouped_outputs"]


def test_messages_without_tools_are_not_touched():
    messages = [USER, {"role": "assistant", "content": "hello"}]
    assert repair_messages(messages).items is messages


def chunk(delta: dict, finish=None, usage=None) -> dict:
    return {"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [] if usage else [{"index": 0, "delta": delta, "finish_reason": finish}],
            "usage": usage}


def test_a_completion_accumulates_turns_and_adds_their_usage():
    completion = Completion("chatcmpl-1", "m", 5)
    for piece in [chunk({"role": "assistant", "content": "Look"}),
                  chunk({"tool_calls": [{"index": 0, "id": "c0", "type": "function",
                                         "function": {"name": "srv__t", "arguments": '{"a"'}}]}),
                  chunk({"tool_calls": [{"index": 0, "function": {"arguments": ": 1}"}}]}),
                  chunk({}, "tool_calls"),
                  chunk({}, usage={"prompt_tokens": 10, "completion_tokens": 3,
                                   "total_tokens": 13})]:
        completion.feed(piece)
    completion.end_turn()
    assert completion.calls() == [{"id": "c0", "type": "function",
                                   "function": {"name": "srv__t", "arguments": '{"a": 1}'}}]
    assert completion.turn_content == "Look"
    completion.turn()
    for piece in [chunk({"content": " done"}, "stop"),
                  chunk({}, usage={"prompt_tokens": 20, "completion_tokens": 2,
                                   "total_tokens": 22})]:
        completion.feed(piece)
    completion.end_turn()
    assert completion.finished() == {
        "object": "chat.completion", "id": "chatcmpl-1", "created": 5, "model": "m",
        "choices": [{"index": 0, "logprobs": None, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "Look done", "refusal": None}}],
        "usage": {"prompt_tokens": 30, "completion_tokens": 5, "total_tokens": 35},
        "system_fingerprint": None, "service_tier": None}


def test_tool_call_pieces_without_an_index_are_the_call_at_their_position():
    """An upstream that streams its calls without `index` (absent or null): each piece is
    the call at its position in the chunk's list, as the Responses translator reads it;
    before, every such piece opened a new call."""
    completion = Completion("chatcmpl-1", "m", 5)
    for piece in [chunk({"tool_calls": [{"id": "c0", "type": "function",
                                         "function": {"name": "f", "arguments": '{"a"'}}]}),
                  chunk({"tool_calls": [{"index": None, "function": {"arguments": ": 1"}}]}),
                  chunk({"tool_calls": [{"function": {"arguments": "}"}}]}),
                  chunk({}, "tool_calls")]:
        completion.feed(piece)
    assert completion.calls() == [{"id": "c0", "type": "function",
                                   "function": {"name": "f", "arguments": '{"a": 1}'}}]


def test_a_cut_call_generated_what_followed_its_start():
    """A cut turn's generated text (what cut_call.py counts): the texts each choice gained
    since the call began, and the turn's tool call arguments; the earlier turns' not."""
    from chat_completions.worker.cut_call import ChatCutCall

    completion = Completion("chatcmpl-1", "m", 5)
    completion.feed(chunk({"role": "assistant", "content": "Look", "reasoning_content": "hm"}))
    completion.feed(chunk({}, usage={"prompt_tokens": 10, "completion_tokens": 3,
                                      "total_tokens": 13}))
    completion.end_turn()
    completion.turn()
    cut = ChatCutCall.began({"model": "m", "messages": []}, completion)
    for piece in [chunk({"reasoning_content": " so"}), chunk({"content": " again"}),
                  chunk({"tool_calls": [{"index": 0, "id": "c1", "type": "function",
                                         "function": {"name": "f", "arguments": '{"b"'}}]})]:
        completion.feed(piece)
    assert cut.generated(completion) == ' again so{"b"'
    assert completion.turn_reported is False
    completion.count_cut_turn({"prompt_tokens": 7, "completion_tokens": 4, "total_tokens": 11})
    completion.end_turn()
    assert completion.usage == {"prompt_tokens": 17, "completion_tokens": 7,
                                "total_tokens": 24}


def test_events_are_json_on_the_bus_and_framed_at_the_edge():
    stamper = ChatStamper()
    first = stamper.entry([chunk({"content": "a"}), comment("mcp_call t\ncompleted")])
    last = stamper.entry([{"object": "chat.completion", "id": "x"}], end=True)
    assert (first.first, first.last, last.first, last.last, last.end) == (0, 1, 2, 2, True)
    assert events_of(first.events) == [chunk({"content": "a"}),
                                     {"object": "gateway.comment", "text": "mcp_call t completed"}]
    assert sse(first.events) == (b"data: " + orjson.dumps(chunk({"content": "a"})) + b"\n\n"
                               + b": mcp_call t completed\n\n")
    assert sse(last.events) == b""
    assert first.after(0).events == [orjson.dumps(comment("mcp_call t completed"))]


def test_a_chat_jobs_message_carries_it_and_is_told_from_a_responses():
    from chat_completions.jobs import ChatJob
    from responses_app.delivery.jobs import job_of_message
    from responses_app.delivery.redelivery import resent_form

    job = ChatJob(id="chatcmpl-1", tenant_id=3, model="m", created=5, created_at=5.5,
                  stream=True, store=False, include_usage=False, metadata={}, messages=[USER],
                  body={"model": "m", "messages": [USER]}, client_function_names=["f"],
                  context={"request_id": "req_1"})
    response_id, carried, trace = job_of_message(job.message({"traceparent": "t"}))
    assert (response_id, carried, trace) == ("chatcmpl-1", job, {"traceparent": "t"})
    assert job_of_message(resent_form(job.message()))[1].resent is True


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                 max_size=3), max_leaves=12)
FIELDS = st.sampled_from(["model", "messages", "stream", "store", "stream_options", "metadata",
                          "tools", "reasoning", "reasoning_effort", "role", "tool_calls",
                          "tool_call_id", "content", "id", "function", "name"])
MESSAGE = st.dictionaries(FIELDS, JSON | st.sampled_from(
    ["user", "tool", "assistant", "system"]), max_size=4)


@settings(max_examples=400, derandomize=True, deadline=None)
@given(payload=st.dictionaries(FIELDS, JSON | st.lists(MESSAGE, max_size=4), max_size=6)
       | JSON)
def test_any_json_body_is_a_create_or_a_400(payload):
    """Bad input is an OpenAI-shaped 400, never a crash (a 500)."""
    try:
        create = parse_chat_create(payload)
    except InvalidRequest as refused:
        assert refused.status == 400
    else:
        assert create.body["messages"] and create.body["stream"] is True
