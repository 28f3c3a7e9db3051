"""Responses items and parameters → the Chat Completions request sent upstream (pure).

Items are written in the stored (normalized) shape `parse_create_request` produces; the body
tests go through `parse_create_request` so they see the params the worker really gets.
"""
import pytest

from responses_app.create.request import parse_create_request
from responses_app.translation.chat_request import build_chat_request, messages_from_items


# --- stored item builders -------------------------------------------------------------------

def message(role, *parts, item_id="msg_1"):
    return {"id": item_id, "type": "message", "role": role, "content": list(parts),
            "status": "completed"}


def input_text(text):
    return {"type": "input_text", "text": text}


def output_text(text):
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def user(text):
    return message("user", input_text(text))


def assistant(text):
    return message("assistant", output_text(text))


def call(call_id, name="get_weather", arguments='{"city":"Oslo"}', **extra):
    return {"id": f"fc_{call_id}", "type": "function_call", "call_id": call_id, "name": name,
            "arguments": arguments, "status": "completed", **extra}


def output(call_id, text="sunny"):
    return {"id": f"fco_{call_id}", "type": "function_call_output", "call_id": call_id,
            "output": text, "status": "completed"}


def reasoning(text):
    return {"id": "rs_1", "type": "reasoning", "summary": [],
            "content": [{"type": "reasoning_text", "text": text}]}


def chat_call(call_id, name="get_weather", arguments='{"city":"Oslo"}'):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def tool(call_id, text="sunny"):
    return {"role": "tool", "tool_call_id": call_id, "content": text}


# --- messages -------------------------------------------------------------------------------

def test_string_input_with_instructions_puts_the_system_message_first():
    request = parse_create_request({"model": "m", "input": "hi", "instructions": "Be brief."})

    built = build_chat_request(model="m", instructions=request.instructions,
                               items=request.input_items, params=request.params,
                               include=request.include, max_tokens_param="max_tokens")

    assert built.body["messages"] == [{"role": "system", "content": "Be brief."},
                                      {"role": "user", "content": "hi"}]


def test_developer_and_system_messages_become_system():
    items = [message("developer", input_text("Use tools.")),
             message("system", input_text("Be kind.")), user("hi")]

    assert messages_from_items(items) == [
        {"role": "system", "content": "Use tools."},
        {"role": "system", "content": "Be kind."},
        {"role": "user", "content": "hi"},
    ]


def test_several_text_parts_are_joined_by_newlines():
    items = [message("user", input_text("one"), input_text("two"))]

    assert messages_from_items(items) == [{"role": "user", "content": "one\ntwo"}]


def test_user_content_with_an_image_becomes_a_list_of_parts():
    items = [message("user", input_text("What is this?"),
                     {"type": "input_image", "image_url": "https://example.test/cat.png",
                      "detail": "low"},
                     {"type": "input_image", "image_url": "data:image/png;base64,AAAA",
                      "detail": "auto"})]

    assert messages_from_items(items) == [{"role": "user", "content": [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": "https://example.test/cat.png",
                                            "detail": "low"}},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA",
                                            "detail": "auto"}},
    ]}]


def test_assistant_output_text_history_becomes_assistant_messages():
    items = [user("hi"), assistant("Hello!"), user("bye")]

    assert messages_from_items(items) == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": "bye"},
    ]


def test_a_turn_with_text_and_a_call_is_one_assistant_message():
    items = [user("Weather in Oslo?"), assistant("Let me check."), call("call_1"),
             output("call_1"), user("Thanks")]

    assert messages_from_items(items) == [
        {"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "content": "Let me check.", "tool_calls": [chat_call("call_1")]},
        tool("call_1"),
        {"role": "user", "content": "Thanks"},
    ]


def test_parallel_calls_share_one_assistant_message():
    items = [user("Weather and time?"),
             call("call_a"), call("call_b", name="get_time", arguments='{"tz":"UTC"}'),
             output("call_a", "sunny"), output("call_b", "noon")]

    assert messages_from_items(items) == [
        {"role": "user", "content": "Weather and time?"},
        {"role": "assistant", "content": None, "tool_calls": [
            chat_call("call_a"), chat_call("call_b", "get_time", '{"tz":"UTC"}')]},
        tool("call_a", "sunny"),
        tool("call_b", "noon"),
    ]


def test_a_call_with_empty_arguments_is_sent_with_an_empty_object():
    items = [call("call_1", name="ping", arguments=""), output("call_1", "pong")]

    assert messages_from_items(items) == [
        {"role": "assistant", "content": None, "tool_calls": [chat_call("call_1", "ping", "{}")]},
        tool("call_1", "pong"),
    ]


def test_an_output_without_its_call_gets_a_synthesized_call():
    items = [user("go"), output("call_missing", "42")]

    assert messages_from_items(items) == [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None,
         "tool_calls": [chat_call("call_missing", "function", "{}")]},
        tool("call_missing", "42"),
    ]


def test_an_output_separated_from_its_call_gets_the_stored_call_synthesized():
    items = [user("a"), call("call_x", arguments='{"city":"Paris"}'), user("b"),
             output("call_x")]

    assert messages_from_items(items) == [
        {"role": "user", "content": "a"},
        {"role": "user", "content": "b"},
        {"role": "assistant", "content": None,
         "tool_calls": [chat_call("call_x", "get_weather", '{"city":"Paris"}')]},
        tool("call_x"),
    ]


def test_a_separated_output_is_synthesized_from_the_stored_call():
    """What passes today: the synthesized message right before the tool message."""
    items = [user("a"), call("call_x", arguments='{"city":"Paris"}'), user("b"),
             output("call_x")]

    messages = messages_from_items(items)

    assert messages[-2:] == [
        {"role": "assistant", "content": None,
         "tool_calls": [chat_call("call_x", "get_weather", '{"city":"Paris"}')]},
        tool("call_x"),
    ]


def test_a_duplicate_output_is_dropped():
    items = [call("call_1"), output("call_1", "first"), output("call_1", "second")]

    assert messages_from_items(items) == [
        {"role": "assistant", "content": None, "tool_calls": [chat_call("call_1")]},
        tool("call_1", "first"),
    ]


def test_an_unanswered_call_followed_by_a_user_message_is_dropped():
    items = [user("a"), call("call_1"), user("never mind")]

    assert messages_from_items(items) == [
        {"role": "user", "content": "a"},
        {"role": "user", "content": "never mind"},
    ]


def test_an_unanswered_call_after_text_keeps_the_text():
    items = [user("a"), assistant("Checking."), call("call_1"), user("stop")]

    assert messages_from_items(items) == [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "Checking."},
        {"role": "user", "content": "stop"},
    ]


def test_reasoning_items_are_not_sent():
    items = [user("hi"), reasoning("Thinking."), assistant("Hello!")]

    assert messages_from_items(items) == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "Hello!"},
    ]


def test_a_namespaced_call_in_history_uses_the_flattened_name():
    items = [call("call_1", name="tool", arguments="{}", namespace="ns"), output("call_1")]

    assert messages_from_items(items) == [
        {"role": "assistant", "content": None, "tool_calls": [chat_call("call_1", "ns__tool", "{}")]},
        tool("call_1"),
    ]


# --- body -----------------------------------------------------------------------------------

def build(max_tokens_param="max_tokens", **fields):
    request = parse_create_request({"model": "m", "input": "hi", **fields})
    return build_chat_request(model=request.model, instructions=request.instructions,
                              items=request.input_items, params=request.params,
                              include=request.include, max_tokens_param=max_tokens_param)


BASE = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True,
        "stream_options": {"include_usage": True}}

WEATHER_PARAMETERS = {"type": "object", "properties": {"city": {"type": "string"}},
                      "required": ["city"], "additionalProperties": False}


def test_the_minimal_body():
    assert build().body == BASE


def test_sampling_parameters_are_sent_only_when_set():
    body = build(temperature=0, top_p=0.5, presence_penalty=1, frequency_penalty=-1).body

    assert body == {**BASE, "temperature": 0.0, "top_p": 0.5, "presence_penalty": 1.0,
                    "frequency_penalty": -1.0}


@pytest.mark.parametrize("param", ["max_tokens", "max_completion_tokens"])
def test_max_output_tokens_goes_to_the_configured_parameter(param):
    assert build(max_tokens_param=param, max_output_tokens=64).body == {**BASE, param: 64}


def test_function_tools_become_chat_tools():
    built = build(tools=[
        {"type": "function", "name": "get_weather", "description": "Weather for a city.",
         "parameters": WEATHER_PARAMETERS, "strict": True},
        {"type": "function", "name": "ping", "strict": False},
    ])

    assert built.body == {**BASE, "tools": [
        {"type": "function", "function": {"name": "get_weather",
                                          "description": "Weather for a city.",
                                          "parameters": WEATHER_PARAMETERS, "strict": True}},
        {"type": "function", "function": {"name": "ping",
                                          "parameters": {"type": "object", "properties": {}}}},
    ], "tool_choice": "auto", "parallel_tool_calls": True}
    assert built.function_names == {}


def test_hosted_tools_are_not_sent():
    built = build(tools=[{"type": "web_search"},
                         {"type": "function", "name": "ping", "strict": False}])

    assert built.body["tools"] == [
        {"type": "function", "function": {"name": "ping",
                                          "parameters": {"type": "object", "properties": {}}}}]


@pytest.mark.parametrize("tools", [[], [{"type": "web_search"}]])
def test_no_tools_sends_no_tool_keys(tools):
    assert build(tools=tools, tool_choice="auto").body == BASE


def test_parallel_tool_calls_false_is_sent():
    body = build(tools=[{"type": "function", "name": "ping", "strict": False}],
                 parallel_tool_calls=False).body

    assert (body["tool_choice"], body["parallel_tool_calls"]) == ("auto", False)


TWO_TOOLS = [{"type": "function", "name": "a", "strict": False},
             {"type": "function", "name": "b", "strict": False}]


def chat_tool(name):
    return {"type": "function",
            "function": {"name": name, "parameters": {"type": "object", "properties": {}}}}


@pytest.mark.parametrize("tool_choice, tools, expected_choice", [
    ("auto", ["a", "b"], "auto"),
    ("required", ["a", "b"], "required"),
    ("none", ["a", "b"], "none"),
    ({"type": "function", "name": "b"}, ["a", "b"],
     {"type": "function", "function": {"name": "b"}}),
    ({"type": "allowed_tools", "mode": "required", "tools": [{"type": "function", "name": "b"}]},
     ["b"], "required"),
    ({"type": "allowed_tools", "mode": "auto", "tools": [{"type": "function", "name": "a"}]},
     ["a"], "auto"),
])
def test_tool_choice_forms(tool_choice, tools, expected_choice):
    body = build(tools=TWO_TOOLS, tool_choice=tool_choice).body

    assert body == {**BASE, "tools": [chat_tool(name) for name in tools],
                    "tool_choice": expected_choice, "parallel_tool_calls": True}


def test_allowed_tools_matching_nothing_sends_no_tools():
    body = build(tools=TWO_TOOLS, tool_choice={
        "type": "allowed_tools", "mode": "auto", "tools": [{"type": "function", "name": "z"}]}).body

    assert body == BASE


NAMESPACE_TOOLS = [
    {"type": "namespace", "name": "ns", "description": "A group.", "tools": [
        {"type": "function", "name": "tool", "description": "Does it.",
         "parameters": WEATHER_PARAMETERS, "strict": False},
        {"type": "function", "name": "other", "strict": False},
    ]},
    {"type": "function", "name": "plain", "strict": False},
]


def test_namespaces_are_flattened_and_mapped_back():
    built = build(tools=NAMESPACE_TOOLS)

    assert built.body["tools"] == [
        {"type": "function", "function": {"name": "ns__tool", "description": "Does it.",
                                          "parameters": WEATHER_PARAMETERS}},
        chat_tool("ns__other"),
        chat_tool("plain"),
    ]
    assert built.function_names == {"ns__tool": ("tool", "ns"), "ns__other": ("other", "ns")}


def test_tool_choice_of_a_namespaced_function_uses_the_flattened_name():
    body = build(tools=NAMESPACE_TOOLS, tool_choice={"type": "function", "name": "tool"}).body

    assert body["tool_choice"] == {"type": "function", "function": {"name": "ns__tool"}}


def test_allowed_tools_filter_namespaced_functions_by_their_name():
    body = build(tools=NAMESPACE_TOOLS, tool_choice={
        "type": "allowed_tools", "mode": "required",
        "tools": [{"type": "function", "name": "other"}, {"type": "function", "name": "plain"}],
    }).body

    assert (body["tools"], body["tool_choice"]) == (
        [chat_tool("ns__other"), chat_tool("plain")], "required")


SCHEMA = {"type": "object", "properties": {"answer": {"type": "integer"}},
          "required": ["answer"], "additionalProperties": False}


@pytest.mark.parametrize("fmt, expected", [
    ({"type": "json_schema", "name": "answer", "schema": SCHEMA, "strict": True},
     {"type": "json_schema", "json_schema": {"name": "answer", "schema": SCHEMA,
                                             "strict": True}}),
    ({"type": "json_schema", "name": "answer", "schema": SCHEMA},
     {"type": "json_schema", "json_schema": {"name": "answer", "schema": SCHEMA,
                                             "strict": False}}),
    ({"type": "json_schema", "name": "answer", "schema": SCHEMA, "description": "The answer."},
     {"type": "json_schema", "json_schema": {"name": "answer", "schema": SCHEMA,
                                             "strict": False, "description": "The answer."}}),
    ({"type": "json_object"}, {"type": "json_object"}),
])
def test_text_format_becomes_response_format(fmt, expected):
    assert build(text={"format": fmt}).body == {**BASE, "response_format": expected}


def test_text_format_text_sends_no_response_format():
    assert build(text={"format": {"type": "text"}}).body == BASE


def test_reasoning_effort_is_sent():
    assert build(reasoning={"effort": "high", "summary": "auto"}).body == {
        **BASE, "reasoning_effort": "high"}


@pytest.mark.parametrize("fields, expected_user", [
    ({"safety_identifier": "hashed-1"}, "hashed-1"),
    ({"user": "legacy-1"}, "legacy-1"),
    ({"safety_identifier": "hashed-1", "user": "legacy-1"}, "hashed-1"),
])
def test_safety_identifier_becomes_user(fields, expected_user):
    assert build(**fields).body == {**BASE, "user": expected_user}


def test_include_logprobs_asks_for_logprobs_and_top_logprobs():
    body = build(include=["message.output_text.logprobs"], top_logprobs=3).body

    assert body == {**BASE, "logprobs": True, "top_logprobs": 3}


def test_include_logprobs_without_top_logprobs_asks_for_logprobs_only():
    body = build(include=["message.output_text.logprobs"]).body

    assert body == {**BASE, "logprobs": True}


def test_other_includes_do_not_ask_for_logprobs():
    assert build(include=["reasoning.encrypted_content"]).body == BASE
