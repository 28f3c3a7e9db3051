"""Tool outputs given as content parts (input_text, input_image, input_file), and the create
parameters passed on to the backends that take them: stored shapes, the exact upstream
messages for a model that takes images and one that does not, and the 400s."""
import base64

import pytest

from responses_app.create.request import parse_create_request
from responses_app.errors import InvalidRequest
from responses_app.translation.chat_request import build_chat_request

IMAGE = "https://img.example/cat.png"
NOTES = base64.b64encode("line one\nline two".encode()).decode()
OUTPUT = [{"type": "input_text", "text": "Two files:"},
          {"type": "input_image", "image_url": IMAGE, "detail": "high"},
          {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="},
          {"type": "input_file", "filename": "notes.txt", "file_data": NOTES},
          {"type": "input_file", "filename": "scan.pdf", "file_id": "file_1"}]
INPUT = [{"role": "user", "content": "look"},
         {"type": "function_call", "call_id": "call_a", "name": "fetch", "arguments": "{}"},
         {"type": "function_call", "call_id": "call_b", "name": "fetch", "arguments": "{}"},
         {"type": "function_call_output", "call_id": "call_a", "output": OUTPUT},
         {"type": "custom_tool_call_output", "call_id": "call_b", "output": "plain"}]
CALLS = {"role": "assistant", "content": None, "tool_calls": [
    {"id": call_id, "type": "function", "function": {"name": "fetch", "arguments": "{}"}}
    for call_id in ("call_a", "call_b")]}


def messages(images, input_items=INPUT, **fields):
    request = parse_create_request({"model": "m", "input": input_items, **fields})
    return build_chat_request(model="m", instructions=None, items=request.input_items,
                              params=request.params, include=[], max_tokens_param="max_tokens",
                              images=images, **({"passthrough": fields and PASSED} or {}))


def test_the_parts_are_stored_as_a_list():
    items = parse_create_request({"model": "m", "input": INPUT}).input_items
    assert items[3]["output"] == [
        {"type": "input_text", "text": "Two files:"},
        {"type": "input_image", "detail": "high", "image_url": IMAGE},
        {"type": "input_image", "detail": "auto",
         "image_url": "data:image/png;base64,iVBORw0KGgo="},
        {"type": "input_file", "filename": "notes.txt", "file_data": NOTES},
        {"type": "input_file", "filename": "scan.pdf", "file_id": "file_1"}]


def test_images_follow_the_tool_turn_for_a_model_that_takes_them():
    assert messages(True).body["messages"] == [
        {"role": "user", "content": "look"}, CALLS,
        {"role": "tool", "tool_call_id": "call_a", "content":
            "Two files:\n[image 1]\n[image 2]\n[file: notes.txt]\nline one\nline two\n"
            "[file: scan.pdf]"},
        {"role": "tool", "tool_call_id": "call_b", "content": "plain"},
        {"role": "user", "content": [
            {"type": "text", "text": "The images in the output of tool call call_a:"},
            {"type": "image_url", "image_url": {"url": IMAGE, "detail": "high"}},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=",
                                                "detail": "auto"}}]}]


def test_images_are_named_in_text_for_a_model_that_takes_none():
    user_image = {"role": "user", "content": [
        {"type": "input_text", "text": "and this"},
        {"type": "input_image", "image_url": IMAGE}]}
    assert messages(False, [*INPUT, user_image]).body["messages"] == [
        {"role": "user", "content": "look"}, CALLS,
        {"role": "tool", "tool_call_id": "call_a", "content":
            f"Two files:\n[image: {IMAGE}]\n[image]\n[file: notes.txt]\nline one\nline two\n"
            "[file: scan.pdf]"},
        {"role": "tool", "tool_call_id": "call_b", "content": "plain"},
        {"role": "user", "content": f"and this\n[image: {IMAGE}]"}]


@pytest.mark.parametrize("part, param, message", [
    ({"type": "input_audio"}, "input[0].output[0].type",
     "Invalid value for 'input[0].output[0].type': 'input_audio' is not a tool output part "
     "type (input_text, input_image, input_file)."),
    ({"type": "input_image"}, "input[0].output[0].image_url",
     "'input[0].output[0]' needs an 'image_url' (a URL or a data URL) or a 'file_id'."),
    ({"type": "input_file", "filename": "a.txt"}, "input[0].output[0]",
     "'input[0].output[0]' needs 'file_data', 'file_url' or 'file_id'."),
])
def test_a_bad_part_is_a_400_naming_it(part, param, message):
    with pytest.raises(InvalidRequest) as caught:
        parse_create_request({"model": "m", "input": [
            {"type": "function_call_output", "call_id": "c", "output": [part]}]})
    assert (caught.value.param, caught.value.message) == (param, message)


PASSED = ("prompt_cache_key", "prompt_cache_retention", "service_tier", "safety_identifier")
FIELDS = {"prompt_cache_key": "tenant-7", "prompt_cache_retention": "24h",
          "service_tier": "flex", "safety_identifier": "user-9"}


def test_the_route_says_which_parameters_are_passed_on():
    body = messages(True, "hi", **FIELDS).body
    assert {name: body.get(name) for name in (*PASSED, "user")} == {**FIELDS, "user": "user-9"}
    request = parse_create_request({"model": "m", "input": "hi", **FIELDS})
    plain = build_chat_request(model="m", instructions=None, items=request.input_items,
                               params=request.params, include=[], max_tokens_param="max_tokens")
    assert {name: plain.body.get(name) for name in (*PASSED, "user")} == {
        "prompt_cache_key": None, "prompt_cache_retention": None, "service_tier": None,
        "safety_identifier": None, "user": "user-9"}
