"""What the upstream receives of a long history (pure: no services): the latest compaction's
summary in place of what came before it, the user messages a compaction kept, and the
truncation that fits a window (with the labelled estimate: UTF-8 bytes / 4)."""
import pytest

from responses_app.context.compaction import kept_user_messages
from responses_app.context.compaction_items import (COMPACTION_PREFIX, carried_items,
                                                    compaction_input_item, compaction_item,
                                                    compacts, unfinished_compaction,
                                                    upstream_items)
from responses_app.context.window import ContextTooLong, fit
from tests.admin_data import assistant_message, user_message
from upstreams.routing import Route
from upstreams.token_counting import count_chat_tokens

ESTIMATE = Route(name="r", base_url="http://127.0.0.1:9/v1", api_key="", connect_timeout=1,
                 idle_timeout=1)


def summary_message(item, summary):
    return {"id": item["id"], "type": "message", "role": "developer",
            "content": [{"type": "input_text", "text": COMPACTION_PREFIX + summary}]}


def test_the_latest_compaction_replaces_what_came_before_but_the_users_it_kept():
    old, also_kept, kept = user_message("old"), user_message("u"), user_message("kept")
    first, latest = compaction_item("first summary"), compaction_item("latest summary")
    after = [assistant_message("answer"), user_message("next")]
    items = [old, first, assistant_message("a"), also_kept, kept, latest, *after]
    assert upstream_items(items) == [summary_message(latest, "latest summary"),
                                     also_kept, kept, *after]


SEARCH_CALL = {"id": "tsc_1", "type": "tool_search_call", "call_id": None, "execution": "server",
               "arguments": {"query": "orders"}, "status": "completed"}
SEARCH_OUTPUT = {"id": "tso_1", "type": "tool_search_output", "call_id": None,
                 "execution": "server", "status": "completed",
                 "tools": [{"type": "function", "name": "lookup_order", "defer_loading": True}]}
ADDED = {"id": "adt_1", "type": "additional_tools", "role": "developer",
         "tools": [{"type": "function", "name": "note"}]}


def test_a_compaction_carries_the_items_that_load_tools_and_a_later_one_again():
    history = [user_message("find it"), SEARCH_CALL, SEARCH_OUTPUT, assistant_message("found"),
               ADDED, {"type": "shell_call", "call_id": "c1"},
               {"type": "shell_call_output", "call_id": "c1"}, user_message("go")]
    assert carried_items(history) == [SEARCH_CALL, SEARCH_OUTPUT, ADDED]
    first = compaction_item("one", carried_items(history))
    assert upstream_items([*history, first]) == [
        summary_message(first, "one"), SEARCH_CALL, SEARCH_OUTPUT, ADDED, history[-1]]
    # a second compaction is of the window the first left (compaction.compact): it carries
    # what the first carried
    window = upstream_items([*history, first, assistant_message("a")])
    second, after = compaction_item("two", carried_items(window)), user_message("next")
    assert upstream_items([first, second, after]) == [
        summary_message(second, "two"), SEARCH_CALL, SEARCH_OUTPUT, ADDED, after]


def test_a_compaction_carries_what_still_waits_for_an_answer_and_nothing_answered():
    answered = [{"type": "function_call", "call_id": "a"},
                {"type": "function_call_output", "call_id": "a"},
                {"type": "mcp_approval_request", "id": "r1"},
                {"type": "mcp_approval_response", "approval_request_id": "r1"},
                {"type": "mcp_approval_request", "id": "r2"},
                {"type": "mcp_call", "approval_request_id": "r2"}]
    waiting = [{"type": "shell_call", "call_id": "b"}, {"type": "custom_tool_call", "call_id": "c"},
               {"type": "apply_patch_call", "call_id": "d"},
               {"type": "mcp_approval_request", "id": "r3"}]
    # an output of another kind does not answer a call
    other = {"type": "custom_tool_call_output", "call_id": "b"}
    assert carried_items([*answered, *waiting, other]) == waiting


def unfinished_item(item_id: str) -> dict:
    return {"id": item_id, "type": "compaction", "encrypted_content": unfinished_compaction()}


def test_an_unfinished_compaction_stands_for_nothing_and_is_not_sent():
    """A compaction cut before its summary: what came before it is sent as if it never
    began; after a compaction that finished, the user messages it kept are found past it."""
    old, kept, after = user_message("old"), user_message("kept"), assistant_message("a")
    cut, go_on = unfinished_item("cmp_cut"), user_message("go on")
    assert (compacts(cut), compacts(compaction_item("s"))) == (False, True)
    assert upstream_items([old, cut, after, go_on]) == [old, after, go_on]
    latest = compaction_item("latest summary")
    answer = assistant_message("b")
    assert upstream_items([old, after, kept, cut, latest, answer, unfinished_item("cmp_2")]) == [
        summary_message(latest, "latest summary"), kept, answer]
    # one before a finished compaction does not hide it
    first = compaction_item("first summary")
    assert upstream_items([old, answer, first, after, cut, kept]) == [
        summary_message(first, "first summary"), after, kept]


def test_an_unfinished_compaction_is_taken_back_as_input():
    cut = unfinished_item("cmp_cut")
    assert compaction_input_item(cut, "input[0]") == cut


def test_items_without_a_compaction_are_sent_as_they_are():
    items = [user_message("a"), assistant_message("b")]
    assert upstream_items(items) is items


def test_a_compaction_keeps_the_newest_user_messages_within_its_budget(settings):
    settings.COMPACTION_KEEP_USER_CHARS = 10
    one, two, three = user_message("12345"), user_message("6789"), user_message("abcdefghijk")
    assert kept_user_messages([one, assistant_message("x"), two, three]) == [three]
    assert kept_user_messages([one, two]) == [one, two]


def body(*messages):
    return {"model": "m", "messages": list(messages)}


SYSTEM = {"role": "system", "content": "s" * 40}  # 10 tokens
OLD = {"role": "user", "content": "u" * 72}  # with "<|user|>\n": 81 bytes, 21 tokens
CALL = {"role": "assistant", "content": None, "tool_calls": [
    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}
RESULT = {"role": "tool", "tool_call_id": "c1", "content": "r" * 60}
NEWEST = {"role": "user", "content": "now"}


@pytest.mark.parametrize("window, kept", [
    (200, [SYSTEM, OLD, CALL, RESULT, NEWEST]),  # fits: unchanged
    (50, [SYSTEM, CALL, RESULT, NEWEST]),  # the oldest message goes
    (30, [SYSTEM, NEWEST]),  # then the call with its result, together
])
def test_auto_truncation_drops_the_oldest_and_keeps_calls_with_their_results(window, kept):
    request = body(SYSTEM, OLD, CALL, RESULT, NEWEST)
    tokens = count_chat_tokens(ESTIMATE, request).tokens
    fitted = fit(ESTIMATE, request, tokens, window, {"truncation": "auto"})
    assert fitted.body["messages"] == kept
    assert fitted.tokens == count_chat_tokens(ESTIMATE, body(*kept)).tokens <= window


def test_what_cannot_fit_is_context_length_exceeded_even_under_auto():
    request = body(SYSTEM, OLD, NEWEST)
    tokens = count_chat_tokens(ESTIMATE, request).tokens
    with pytest.raises(ContextTooLong):
        fit(ESTIMATE, request, tokens, 12, {"truncation": "auto"})  # system + newest: 13
    with pytest.raises(ContextTooLong):
        fit(ESTIMATE, request, tokens, 60, {"truncation": "disabled", "max_output_tokens": 30})
