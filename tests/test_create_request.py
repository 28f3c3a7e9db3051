"""Validation of a `POST /v1/responses` body: normalized item shapes and the exact 400s."""
import re
from pathlib import Path

import pytest

from hosted_tools.tenant_tools import settle_web_search
from responses_app.create.body import FIELDS, NOT_APPLIED
from responses_app.create.request import parse_create_request
from responses_app.errors import InvalidRequest
from responses_app.translation.chat_request import build_chat_request

GENERATED_ID = re.compile(r"(msg|fc|fco|rs)_[0-9a-f]{48}")


def parse(**fields):
    return parse_create_request({"model": "m", **fields})


def without_id(item):
    """The item minus its generated id, after checking the id's shape and prefix."""
    match = GENERATED_ID.fullmatch(item["id"])
    assert match is not None, f"not a generated id: {item['id']!r}"
    return match.group(1), {key: value for key, value in item.items() if key != "id"}


# --- normalized shapes ----------------------------------------------------------------------

def test_string_input_is_one_user_message():
    request = parse(input="hi")

    assert [without_id(item) for item in request.input_items] == [
        ("msg", {"type": "message", "role": "user",
                 "content": [{"type": "input_text", "text": "hi"}], "status": "completed"})]


def test_the_defaults():
    request = parse(input="hi")

    assert (request.model, request.instructions, request.stream, request.store,
            request.background, request.previous_response_id, request.include) == (
        "m", None, False, True, False, None, [])
    assert request.params == {
        "tools": [], "tool_choice": "auto", "parallel_tool_calls": True,
        "temperature": None, "top_p": None, "presence_penalty": None,
        "frequency_penalty": None, "top_logprobs": None, "max_output_tokens": None,
        "max_tool_calls": None, "text": {"format": {"type": "text"}}, "reasoning": None,
        "truncation": "disabled", "metadata": {}, "user": None, "safety_identifier": None,
        "prompt_cache_key": None, "service_tier": "default",
    }


def test_client_ids_are_kept():
    request = parse(input=[
        {"id": "msg_client", "type": "message", "role": "user", "content": "hi"},
        {"id": "fc_client", "type": "function_call", "call_id": "call_1", "name": "ping",
         "arguments": "{}", "status": "completed"},
        {"id": "fco_client", "type": "function_call_output", "call_id": "call_1",
         "output": "pong"},
    ])

    assert request.input_items == [
        {"id": "msg_client", "type": "message", "role": "user",
         "content": [{"type": "input_text", "text": "hi"}], "status": "completed"},
        {"id": "fc_client", "type": "function_call", "call_id": "call_1", "name": "ping",
         "arguments": "{}", "status": "completed"},
        {"id": "fco_client", "type": "function_call_output", "call_id": "call_1",
         "output": "pong", "status": "completed"},
    ]


def test_items_without_ids_get_generated_ids_by_type():
    request = parse(input=[
        {"type": "function_call", "call_id": "call_1", "name": "ping"},
        {"type": "function_call_output", "call_id": "call_1",
         "output": [{"type": "input_text", "text": "po"}, {"type": "input_text", "text": "ng"}]},
        {"type": "reasoning", "summary": [], "content": None, "encrypted_content": "opaque"},
    ])

    assert [without_id(item) for item in request.input_items] == [
        ("fc", {"type": "function_call", "call_id": "call_1", "name": "ping", "arguments": "",
                "status": "completed"}),
        ("fco", {"type": "function_call_output", "call_id": "call_1", "output": [
            {"type": "input_text", "text": "po"}, {"type": "input_text", "text": "ng"}],
                 "status": "completed"}),
        ("rs", {"type": "reasoning", "summary": [], "content": [],
                "encrypted_content": "opaque"}),
    ]


def test_a_message_without_type_is_accepted():
    request = parse(input=[{"role": "developer", "content": "Be brief."},
                           {"role": "user", "content": [{"type": "input_text", "text": "hi"}]}])

    assert [without_id(item) for item in request.input_items] == [
        ("msg", {"type": "message", "role": "developer",
                 "content": [{"type": "input_text", "text": "Be brief."}], "status": "completed"}),
        ("msg", {"type": "message", "role": "user",
                 "content": [{"type": "input_text", "text": "hi"}], "status": "completed"}),
    ]


def test_assistant_string_content_becomes_an_output_text_part():
    request = parse(input=[{"role": "assistant", "content": "Hello!"}])

    assert [without_id(item) for item in request.input_items] == [
        ("msg", {"type": "message", "role": "assistant",
                 "content": [{"type": "output_text", "text": "Hello!", "annotations": [],
                              "logprobs": []}],
                 "status": "completed"})]


def test_content_parts_are_normalized():
    request = parse(input=[{"role": "user", "content": [
        {"type": "input_text", "text": "Look"},
        {"type": "input_image", "image_url": "https://example.test/cat.png"},
        {"type": "input_image", "image_url": "https://example.test/dog.png", "detail": "high"},
    ]}, {"role": "assistant", "content": [
        {"type": "output_text", "text": "A cat."}, {"type": "refusal", "refusal": "No."}]}])

    assert [item["content"] for item in request.input_items] == [
        [{"type": "input_text", "text": "Look"},
         {"type": "input_image", "image_url": "https://example.test/cat.png", "detail": "auto"},
         {"type": "input_image", "image_url": "https://example.test/dog.png", "detail": "high"}],
        [{"type": "output_text", "text": "A cat.", "annotations": [], "logprobs": []},
         {"type": "refusal", "refusal": "No."}],
    ]


def test_function_tools_are_normalized_with_strict_echoed():
    """A web_search tool with no backend (the default) is dropped, named in dropped_tools
    (once the front door knows no backend serves the tenant)."""
    request = parse(input="hi", tools=[
        {"type": "function", "name": "a"},
        {"type": "function", "name": "b", "description": "B.", "strict": False,
         "parameters": {"type": "object", "properties": {}}},
        {"type": "web_search"},
    ])

    assert request.params["tools"] == [
        {"type": "function", "name": "a", "description": None, "parameters": None,
         "strict": True},
        {"type": "function", "name": "b", "description": "B.",
         "parameters": {"type": "object", "properties": {}}, "strict": False},
        {"type": "web_search", "search_context_size": "medium", "user_location": None,
         "filters": None},
    ]
    settle_web_search(request, backend_serves_tenant=False)
    assert [tool["name"] for tool in request.params["tools"]] == ["a", "b"]
    assert request.dropped_tools == ["web_search"]


def test_a_function_call_keeps_its_namespace():
    request = parse(
        input=[{"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "tool",
                "namespace": "ns", "arguments": "{}", "status": "completed"},
               {"type": "function_call_output", "id": "fco_1", "call_id": "call_1",
                "output": "done"}],
        tools=[{"type": "namespace", "name": "ns",
                "tools": [{"type": "function", "name": "tool", "strict": False}]}])

    body = build_chat_request(model="m", instructions=None, items=request.input_items,
                              params=request.params, include=[],
                              max_tokens_param="max_tokens").body

    assert request.input_items[0] == {
        "id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "tool",
        "namespace": "ns", "arguments": "{}", "status": "completed"}
    assert body["messages"][0]["tool_calls"] == [
        {"id": "call_1", "type": "function", "function": {"name": "ns__tool", "arguments": "{}"}}]


# --- rejected bodies ------------------------------------------------------------------------

REJECTED = [
    ("missing model", {"input": "hi"}, "model", "missing_required_parameter"),
    ("missing input", {"model": "m"}, "input", "missing_required_parameter"),
    ("input a number", {"model": "m", "input": 42}, "input", "invalid_type"),
    ("unknown item type", {"model": "m", "input": [{"type": "telepathy"}]},
     "input[0].type", "invalid_value"),
    ("bad role", {"model": "m", "input": [{"role": "robot", "content": "hi"}]},
     "input[0].role", "invalid_value"),
    ("bad part type",
     {"model": "m", "input": [{"role": "user", "content": [{"type": "input_audio"}]}]},
     "input[0].content[0].type", "invalid_value"),
    ("temperature hot", {"model": "m", "input": "hi", "temperature": "hot"},
     "temperature", "invalid_type"),
    ("top_p 2", {"model": "m", "input": "hi", "top_p": 2}, "top_p", "invalid_value"),
    ("stream yes", {"model": "m", "input": "hi", "stream": "yes"}, "stream", "invalid_type"),
    ("tools not a list", {"model": "m", "input": "hi", "tools": {"type": "function"}},
     "tools", "invalid_type"),
    ("mcp tool to loopback", {"model": "m", "input": "hi", "tools": [
        {"type": "mcp", "server_label": "x", "server_url": "http://127.0.0.1:1/mcp"}]},
     "tools[0].server_url", "invalid_value"),
    ("unknown tool type", {"model": "m", "input": "hi", "tools": [{"type": "teleport"}]},
     "tools[0].type", "invalid_value"),
    ("bad tool_choice", {"model": "m", "input": "hi", "tool_choice": "sometimes"},
     "tool_choice", "invalid_value"),
    ("text.format xml", {"model": "m", "input": "hi", "text": {"format": {"type": "xml"}}},
     "text.format.type", "invalid_value"),
    ("metadata 17 keys",
     {"model": "m", "input": "hi", "metadata": {f"k{i}": "v" for i in range(17)}},
     "metadata", "invalid_value"),
    ("include unknown", {"model": "m", "input": "hi", "include": ["everything"]},
     "include", "invalid_value"),
    ("background without store", {"model": "m", "input": "hi", "background": True,
                                  "store": False},
     "background", "invalid_value"),
    ("prompt version not a number",
     {"model": "m", "input": "hi", "prompt": {"id": "pmpt_1", "version": "latest"}},
     "prompt.version", "invalid_value"),
    ("conversation a number", {"model": "m", "input": "hi", "conversation": 7},
     "conversation", "invalid_type"),
    ("conversation without id", {"model": "m", "input": "hi", "conversation": {"name": "x"}},
     "conversation", "invalid_type"),
    ("conversation and previous_response_id",
     {"model": "m", "input": "hi", "conversation": "conv_1", "previous_response_id": "resp_1"},
     None, "mutually_exclusive_parameters"),
    ("function_call without call_id",
     {"model": "m", "input": [{"type": "function_call", "name": "ping", "arguments": "{}"}]},
     "input[0].call_id", "invalid_value"),
    ("body a list", [{"model": "m", "input": "hi"}], None, None),
]


@pytest.mark.parametrize("body, param, code",
                         [pytest.param(body, param, code, id=name)
                          for name, body, param, code in REJECTED])
def test_it_rejects_the_body(body, param, code):
    with pytest.raises(InvalidRequest) as caught:
        parse_create_request(body)

    error = caught.value
    assert (error.status, error.type, error.param, error.code) == (
        400, "invalid_request_error", param, code)


@pytest.mark.parametrize("conversation", ["conv_1", {"id": "conv_1"}])
def test_conversation_is_an_id_or_an_object_with_one(conversation):
    assert parse(input="hi", conversation=conversation).conversation_id == "conv_1"


def test_metadata_with_16_keys_is_accepted():
    metadata = {f"k{i}": "v" for i in range(16)}

    assert parse(input="hi", metadata=metadata).params["metadata"] == metadata


# --- the parameters of OpenAI's create schema, and OpenAI's own errors ----------------------

def test_every_parameter_of_the_openai_sdk_is_known():
    from openai.types.responses.response_create_params import ResponseCreateParamsStreaming as P

    assert (P.__required_keys__ | P.__optional_keys__) - set(FIELDS) == set()


def test_the_parameters_the_gateway_does_not_apply_are_accepted_and_left_out():
    request = parse(input="hi", prompt_cache_options={"mode": "implicit"},
                    stream_options={"include_obfuscation": False},
                    background_options={"completion_window": "soonest"},
                    moderation={"model": "omni-moderation-latest"},
                    image={"context_compression": "auto"}, access_programs={"cyber": "standard"})

    assert request.params == parse(input="hi").params


def test_the_docs_list_the_parameters_the_gateway_does_not_apply():
    readme = (Path(__file__).parent.parent / "docs" / "behaviour.md").read_text()
    [listed] = re.findall(r"Accepted,\s+not applied[^:]*:([^.]*)\.", readme)
    assert re.findall(r"`([a-z_]+)`", listed) == list(NOT_APPLIED)


OPENAI_ERRORS = [
    ("unknown", {"seed": 1}, "Unknown parameter: 'seed'.", "seed", "unknown_parameter"),
    ("chat's max_tokens", {"max_tokens": 16}, "Unknown parameter: 'max_tokens'.", "max_tokens",
     "unknown_parameter"),
    ("messages", {"messages": [{"role": "user", "content": "hi"}]},
     "Unsupported parameter: 'messages'. In the Responses API, this parameter has moved to "
     "'input'. Try again with the new parameter. See the API documentation for more "
     "information: https://platform.openai.com/docs/api-reference/responses/create.",
     None, "unsupported_parameter"),
    ("model an integer", {"model": 7},
     "Invalid type for 'model': expected a string, but got an integer instead.", "model",
     "invalid_type"),
    ("temperature a string", {"temperature": "hot"},
     "Invalid type for 'temperature': expected a decimal, but got a string instead.",
     "temperature", "invalid_type"),
    ("stream a string", {"stream": "yes"},
     "Invalid type for 'stream': expected a boolean, but got a string instead.", "stream",
     "invalid_type"),
    ("max_tool_calls a string", {"max_tool_calls": "x"},
     "Invalid type for 'max_tool_calls': expected an integer, but got a string instead.",
     "max_tool_calls", "invalid_type"),
    ("instructions an object", {"instructions": {"a": 1}},
     "Invalid type for 'instructions': expected a string, but got an object instead.",
     "instructions", "invalid_type"),
    ("reasoning a string", {"reasoning": "low"},
     "Invalid type for 'reasoning': expected an object, but got a string instead.",
     "reasoning", "invalid_type"),
    ("stream_options a string", {"stream_options": "x"},
     "Invalid type for 'stream_options': expected an object, but got a string instead.",
     "stream_options", "invalid_type"),
    ("top_p a list", {"top_p": [1]},
     "Invalid type for 'top_p': expected a decimal, but got an array instead.", "top_p",
     "invalid_type"),
]


@pytest.mark.parametrize("fields, message, param, code",
                         [pytest.param(fields, message, param, code, id=name)
                          for name, fields, message, param, code in OPENAI_ERRORS])
def test_openais_error(fields, message, param, code):
    with pytest.raises(InvalidRequest) as caught:
        parse_create_request({"model": "m", "input": "hi", **fields})

    error = caught.value
    assert (error.status, error.type, error.message, error.param, error.code) == (
        400, "invalid_request_error", message, param, code)
