"""History repair (pure): each repair's exact upstream message list, through
build_chat_request, and the repairs it reports for the run to log and count."""
from responses_app.translation.chat_request import build_chat_request
from responses_app.translation.history_repair import repair_items
from tests.test_chat_request import (
    assistant, call, chat_call, output, reasoning, tool, user,
)


def upstream(items, merge_user_messages=False):
    chat = build_chat_request(model="m", instructions=None, items=items, params={},
                              include=[], max_tokens_param="max_tokens",
                              merge_user_messages=merge_user_messages)
    return chat.body["messages"], chat.repairs


def test_a_clean_history_needs_no_repair():
    items = [user("Weather?"), call("call_1"), output("call_1"), assistant("Sunny.")]
    assert repair_items(items).repairs == []
    assert upstream(items) == ([
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": None, "tool_calls": [chat_call("call_1")]},
        tool("call_1"), {"role": "assistant", "content": "Sunny."}], [])


def test_a_call_without_its_output_gets_an_aborted_output():
    assert upstream([user("a"), call("call_1"), user("never mind")]) == ([
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": None, "tool_calls": [chat_call("call_1")]},
        tool("call_1", "aborted"),
        {"role": "user", "content": "never mind"}], ["missing_output"])


def test_interleaved_outputs_of_parallel_calls_are_regrouped_in_call_order():
    items = [user("Weather and time?"), call("call_a"),
             call("call_b", name="get_time", arguments="{}"), output("call_b", "noon"),
             user("hurry"), output("call_a", "sunny")]
    assert upstream(items) == ([
        {"role": "user", "content": "Weather and time?"},
        {"role": "assistant", "content": None, "tool_calls": [
            chat_call("call_a"), chat_call("call_b", "get_time", "{}")]},
        tool("call_a", "sunny"), tool("call_b", "noon"),
        {"role": "user", "content": "hurry"}], ["regrouped_outputs"])


def test_an_output_whose_call_is_nowhere_gets_a_call_and_a_duplicate_is_dropped():
    items = [user("go"), output("call_x", "42"), call("call_1"), output("call_1", "one"),
             output("call_1", "again")]
    assert upstream(items) == ([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None,
         "tool_calls": [chat_call("call_x", "function", "{}")]},
        tool("call_x", "42"),
        {"role": "assistant", "content": None, "tool_calls": [chat_call("call_1")]},
        tool("call_1", "one")], ["missing_call", "duplicate_output"])


def test_empty_reasoning_items_are_dropped_and_counted():
    empty = {"id": "rs_2", "type": "reasoning", "summary": [], "content": []}
    assert upstream([user("hi"), empty, reasoning("Thinking."), assistant("Hello!")]) == ([
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "Hello!"}], ["empty_reasoning"])


def test_reasoning_between_parallel_calls_keeps_them_one_turn():
    items = [user("both"), call("call_a"), reasoning("and"), call("call_b"),
             output("call_a"), output("call_b")]
    assert upstream(items) == ([
        {"role": "user", "content": "both"},
        {"role": "assistant", "content": None,
         "tool_calls": [chat_call("call_a"), chat_call("call_b")]},
        tool("call_a"), tool("call_b")], [])


def test_consecutive_user_messages_are_sent_as_they_are_by_default():
    assert upstream([user("first"), user("second")]) == ([
        {"role": "user", "content": "first"}, {"role": "user", "content": "second"}], [])


def test_consecutive_user_messages_are_merged_without_losing_text_when_asked():
    image = {"id": "msg_2", "type": "message", "role": "user", "status": "completed",
             "content": [{"type": "input_image", "image_url": "data:image/png;base64,AA",
                          "detail": "auto"}]}
    assert upstream([user("first"), user("second"), assistant("ok"), user("third"),
                     image], merge_user_messages=True) == ([
        {"role": "user", "content": "first\n\nsecond"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": [
            {"type": "text", "text": "third"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA",
                                                "detail": "auto"}}]},
    ], ["merged_user_messages", "merged_user_messages"])
