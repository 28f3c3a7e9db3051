"""Custom (freeform) tools, pure parts: the create body's tool and items, the function tool
offered upstream, the history sent back, the input decoded from streamed arguments, and the
exact events of a `custom_tool_call` (judged by both schema oracles and the invariant
checker, through the state machine tests' `translate`)."""
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from responses_app.create.request import parse_create_request
from responses_app.errors import InvalidRequest
from responses_app.translation.chat_request import build_chat_request
from responses_app.translation.custom_input import InputDecoder
from tests.test_state_machine import chunk, text_message, translate

GRAMMAR = {"type": "grammar", "syntax": "lark", "definition": 'start: "a"+'}
PATCH_TOOL = {"type": "custom", "name": "apply_patch", "description": "Apply a patch.",
              "format": GRAMMAR}
UPSTREAM_PATCH_TOOL = {"type": "function", "function": {
    "name": "apply_patch",
    "description": "Apply a patch.\n\nThe `input` argument must be text matching this lark "
                   "grammar:\nstart: \"a\"+",
    "parameters": {"type": "object",
                   "properties": {"input": {"type": "string", "description":
                                            "The raw input of the tool (free-form text)."}},
                   "required": ["input"], "additionalProperties": False}}}


def build(**fields):
    request = parse_create_request({"model": "m", "input": "hi", **fields})
    return build_chat_request(model="m", instructions=None, items=request.input_items,
                              params=request.params, include=[], max_tokens_param="max_tokens")


# --- the create body ------------------------------------------------------------------------

def test_a_custom_tool_is_stored_with_its_format():
    params = parse_create_request({"model": "m", "input": "hi", "tools": [
        PATCH_TOOL, {"type": "custom", "name": "note"}]}).params
    assert params["tools"] == [PATCH_TOOL, {"type": "custom", "name": "note",
                                            "description": None, "format": {"type": "text"}}]


@pytest.mark.parametrize("tool, param, message", [
    ({"type": "custom"}, "tools[0].name", "Missing or invalid 'tools[0].name': must be a string."),
    ({"type": "custom", "name": "x", "format": {"type": "grammar", "syntax": "ebnf",
                                               "definition": "x"}},
     "tools[0].format.syntax",
     "Invalid value for 'tools[0].format.syntax': must be one of ['lark', 'regex']."),
    ({"type": "custom", "name": "x", "format": {"type": "json"}}, "tools[0].format",
     "Invalid value for 'tools[0].format': the format of a custom tool is {'type': 'text'} or "
     "{'type': 'grammar', 'syntax', 'definition'}."),
])
def test_a_bad_custom_tool_is_a_400_naming_the_field(tool, param, message):
    with pytest.raises(InvalidRequest) as caught:
        parse_create_request({"model": "m", "input": "hi", "tools": [tool]})
    assert (caught.value.param, caught.value.message) == (param, message)


def test_custom_items_are_stored_in_their_shapes():
    items = parse_create_request({"model": "m", "input": [
        {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_1", "name": "apply_patch",
         "input": "a"},
        {"type": "custom_tool_call_output", "id": "ctco_1", "call_id": "call_1",
         "output": [{"type": "input_text", "text": "Done"}]},
    ]}).input_items
    assert items == [
        {"id": "ctc_1", "type": "custom_tool_call", "call_id": "call_1", "name": "apply_patch",
         "input": "a", "status": "completed"},
        {"id": "ctco_1", "type": "custom_tool_call_output", "call_id": "call_1",
         "output": [{"type": "input_text", "text": "Done"}], "status": "completed"}]


# --- upstream request -----------------------------------------------------------------------

def test_a_custom_tool_is_offered_as_a_function_of_one_string():
    chat = build(tools=[PATCH_TOOL, {"type": "custom", "name": "note"}],
                 tool_choice={"type": "custom", "name": "apply_patch"})
    assert chat.body["tools"] == [UPSTREAM_PATCH_TOOL, {"type": "function", "function": {
        "name": "note", "parameters": UPSTREAM_PATCH_TOOL["function"]["parameters"]}}]
    assert chat.body["tool_choice"] == {"type": "function", "function": {"name": "apply_patch"}}
    assert chat.custom_tools == frozenset({"apply_patch", "note"})


def test_a_custom_call_and_its_output_go_back_as_a_tool_turn():
    chat = build(input=[
        {"role": "user", "content": "patch it"},
        {"type": "custom_tool_call", "call_id": "call_1", "name": "apply_patch",
         "input": 'say "hi"\n'},
        {"type": "custom_tool_call_output", "call_id": "call_1", "output": "Done"}])
    assert chat.body["messages"] == [
        {"role": "user", "content": "patch it"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {
                "name": "apply_patch", "arguments": '{"input": "say \\"hi\\"\\n"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "Done"}]


# --- decoding the input as it streams -------------------------------------------------------

def test_the_input_is_decoded_piece_by_piece():
    decoder = InputDecoder()
    pieces = ['{"inp', 'ut": "li', 'ne\\', 'n\\u00e', '9 \\ud83d', '\\ude00"', '}']
    assert [decoder.feed(p) for p in pieces] == ["", "li", "ne", "\n", "é ", "😀", ""]
    assert decoder.finish() == ""
    assert decoder.emitted == "line\né 😀"


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(['a', '"', '\\', '\n', '\t', 'é', '😀', '\u2028',
                                              '}', '{', ' '])),
       ascii_only=st.booleans(), cuts=st.lists(st.integers(min_value=1), max_size=12))
def test_any_split_of_the_arguments_decodes_to_the_input(text, ascii_only, cuts):
    """However the arguments are cut into pieces (an escape, a surrogate pair or the opening
    split anywhere), the pieces handed out make the input, each piece decoded once."""
    arguments = json.dumps({"input": text}, ensure_ascii=ascii_only)
    at = sorted({cut % len(arguments) for cut in cuts} - {0})
    pieces = [arguments[i:j] for i, j in zip([0, *at], [*at, len(arguments)])]
    decoder = InputDecoder()
    streamed = [decoder.feed(piece) for piece in pieces]
    assert "".join(streamed) + decoder.finish() == text
    assert decoder.emitted == text


@pytest.mark.parametrize("arguments, expected", [
    ('{"path": "a.txt", "input": "x"}', "x"),   # another key first: decoded at the end
    ('{"text": "renamed"}', "renamed"),          # the model renamed the argument
    ("not json", "not json"),                    # raw text
    ('{"input": "cut sho', "cut sho"),           # truncated (max tokens): what streamed
])
def test_other_argument_shapes_are_decoded_at_the_end(arguments, expected):
    decoder = InputDecoder()
    streamed = decoder.feed(arguments)
    assert streamed + decoder.finish() == expected


# --- the events -----------------------------------------------------------------------------

def call_piece(arguments, head=False):
    call = {"index": 0, "function": {"arguments": arguments}}
    if head:
        call.update(id="call_p", type="function")
        call["function"]["name"] = "apply_patch"
    return chunk({"tool_calls": [call]})


def test_a_custom_call_streams_its_raw_input():
    chunks = [chunk({"role": "assistant", "content": "Patching."}),
              call_piece('{"input": "*** Be', head=True), call_piece('gin\\n*** End"}'),
              chunk({}, "tool_calls")]

    events, response = translate(chunks, custom_tools=frozenset({"apply_patch"}))

    call = {"id": "ctc_1", "type": "custom_tool_call", "status": "completed",
            "call_id": "call_p", "name": "apply_patch", "input": "*** Begin\n*** End"}
    assert [(e["type"], e.get("delta", e.get("input"))) for e in events[8:]] == [
        ("response.output_item.added", None),
        ("response.custom_tool_call_input.delta", "*** Be"),
        ("response.custom_tool_call_input.delta", "gin\n*** End"),
        ("response.custom_tool_call_input.done", "*** Begin\n*** End"),
        ("response.output_item.done", None),
        ("response.completed", None)]
    assert events[8]["item"] == {**call, "status": "in_progress", "input": ""}
    assert response["output"] == [text_message("msg_0", "Patching."), call]


def test_a_custom_call_cut_short_is_incomplete_with_what_streamed():
    chunks = [call_piece('{"input": "half', head=True)]

    events, response = translate(chunks, custom_tools=frozenset({"apply_patch"}),
                                 fail=("server_error", "upstream died"))

    assert [e["type"] for e in events[2:]] == [
        "response.output_item.added", "response.custom_tool_call_input.delta",
        "response.custom_tool_call_input.done", "response.output_item.done",
        "response.failed"]
    assert response["output"][0]["input"] == "half"
    assert response["output"][0]["status"] == "incomplete"


def test_a_function_named_like_no_custom_tool_stays_a_function_call():
    chunks = [call_piece('{"input": "x"}', head=True), chunk({}, "tool_calls")]

    _, response = translate(chunks)

    assert response["output"][0]["type"] == "function_call"
    assert json.loads(response["output"][0]["arguments"]) == {"input": "x"}


def test_a_dead_run_closes_its_custom_call_with_the_input_streamed():
    from responses_app.translation.recovery import close_dead_run

    added = {"id": "ctc_1", "type": "custom_tool_call", "status": "in_progress",
             "call_id": "call_1", "name": "apply_patch", "input": ""}
    events = [{"type": "response.output_item.added", "output_index": 0, "item": added},
              {"type": "response.custom_tool_call_input.delta", "item_id": "ctc_1",
               "output_index": 0, "delta": "*** Begin"}]
    closing, output = close_dead_run(events)
    item = {**added, "status": "incomplete", "input": "*** Begin"}
    assert closing == [
        {"type": "response.custom_tool_call_input.done", "item_id": "ctc_1", "output_index": 0,
         "input": "*** Begin"},
        {"type": "response.output_item.done", "output_index": 0, "item": item}]
    assert output == [item]


# --- custom tools in a namespace (Codex's code mode: `functions.exec`) ---------------------

EXEC_TOOL = {"type": "custom", "name": "exec", "description": "Run a script.", "format": GRAMMAR}
WAIT_TOOL = {"type": "function", "name": "wait", "description": "Wait.",
             "parameters": {"type": "object", "properties": {}}, "strict": False}
FUNCTIONS = {"type": "namespace", "name": "functions", "description": "Code mode.",
             "tools": [EXEC_TOOL, WAIT_TOOL]}
UPSTREAM_FUNCTIONS = [
    {"type": "function", "function": {
        **UPSTREAM_PATCH_TOOL["function"], "name": "functions__exec",
        "description": "Run a script.\n\nThe `input` argument must be text matching this lark "
                       "grammar:\nstart: \"a\"+"}},
    {"type": "function", "function": {"name": "functions__wait", "description": "Wait.",
                                      "parameters": {"type": "object", "properties": {}}}}]


def test_a_namespaced_custom_tool_is_stored_and_offered_as_a_flattened_function():
    params = parse_create_request({"model": "m", "input": "hi", "tools": [FUNCTIONS]}).params
    assert params["tools"] == [FUNCTIONS]
    chat = build(tools=[FUNCTIONS], tool_choice={"type": "custom", "name": "exec"})
    assert chat.body["tools"] == UPSTREAM_FUNCTIONS
    assert chat.body["tool_choice"] == {"type": "function",
                                        "function": {"name": "functions__exec"}}
    assert chat.custom_tools == frozenset({"functions__exec"})
    assert chat.function_names == {"functions__exec": ("exec", "functions"),
                                   "functions__wait": ("wait", "functions")}


def test_a_namespaced_custom_tool_given_in_an_item_is_offered_the_same_way():
    chat = build(input=[{"type": "additional_tools", "role": "developer", "tools": [FUNCTIONS]},
                        {"role": "user", "content": "hi"}])
    assert chat.body["tools"] == UPSTREAM_FUNCTIONS
    assert chat.custom_tools == frozenset({"functions__exec"})


def test_a_namespace_member_neither_function_nor_custom_is_a_400():
    with pytest.raises(InvalidRequest) as caught:
        parse_create_request({"model": "m", "input": "hi", "tools": [
            {**FUNCTIONS, "tools": [{"type": "web_search"}]}]})
    assert (caught.value.param, caught.value.message) == (
        "tools[0].tools[0]", "'tools[0].tools[0]' must be a function or custom tool.")


def test_a_namespaced_custom_call_keeps_its_namespace_and_goes_back_by_its_flat_name():
    call = {"type": "custom_tool_call", "call_id": "call_1", "name": "exec",
            "namespace": "functions", "input": "text(1)"}
    items = parse_create_request({"model": "m", "input": [call]}).input_items
    assert items[0]["namespace"] == "functions"
    chat = build(tools=[FUNCTIONS], input=[
        {"role": "user", "content": "run it"}, call,
        {"type": "custom_tool_call_output", "call_id": "call_1", "output": "1"}])
    assert chat.body["messages"][1:] == [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {
                "name": "functions__exec", "arguments": '{"input": "text(1)"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "1"}]


def test_a_namespaced_custom_call_streams_as_a_custom_tool_call_with_its_namespace():
    head = chunk({"tool_calls": [{"index": 0, "id": "call_x", "type": "function", "function": {
        "name": "functions__exec", "arguments": '{"input": "text('}}]})
    chunks = [head, call_piece('1)"}'), chunk({}, "tool_calls")]

    events, response = translate(chunks, custom_tools=frozenset({"functions__exec"}),
                                 function_names={"functions__exec": ("exec", "functions")})

    assert response["output"] == [
        {"id": "ctc_0", "type": "custom_tool_call", "status": "completed", "call_id": "call_x",
         "name": "exec", "namespace": "functions", "input": "text(1)"}]
    assert [(e["type"], e.get("delta")) for e in events[2:6]] == [
        ("response.output_item.added", None),
        ("response.custom_tool_call_input.delta", "text("),
        ("response.custom_tool_call_input.delta", "1)"),
        ("response.custom_tool_call_input.done", None)]
