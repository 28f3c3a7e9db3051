"""The client-run tools end to end on the shared deployment, the openai SDK as the client:
a streamed `shell_call` and `apply_patch_call` from a Chat Completions model, their outputs
sent back by `previous_response_id` (exact upstream messages), a `local_shell_call` round
trip without streaming, and an output whose call is nowhere (a 400)."""
import json

import pytest

from responses_app.context.compaction_items import COMPACTION_PREFIX
from responses_app.context.summary import COMPACTION_PROMPT
from tests.context_deployment import summary_of
from tests.invariants import check_stream
from tests.oracles import validate_event, validate_response

SHELL = {"type": "shell", "environment": {"type": "local"}}
PATCH_ARGUMENTS = {"type": "update_file", "path": "greeting.txt",
                   "diff": "@@\n-Hello\n+Hello, patched\n"}
SHELL_ARGUMENTS = {"commands": ["ls", "cat greeting.txt"]}


def dumped(events) -> list[dict]:
    return [event.model_dump(mode="json", exclude_unset=True, warnings=False)
            for event in events]


def test_a_shell_call_and_a_patch_streamed_then_answered_in_a_chain(openai_client,
                                                                     clean_upstream):
    prompt = (f"call shell {json.dumps(SHELL_ARGUMENTS)}\n"
              f"call apply_patch {json.dumps(PATCH_ARGUMENTS)}")
    with openai_client.responses.stream(model="fake-tool-caller", input=prompt,
                                        tools=[SHELL, {"type": "apply_patch"}]) as stream:
        events = dumped(stream)
        final = stream.get_final_response()
    for event in events:
        validate_event(event)
    check_stream(events)
    command = {"output_index": 0}
    assert [(e["type"], e.get("command_index"), e.get("delta", e.get("command")))
            for e in events] == [
        ("response.created", None, None), ("response.in_progress", None, None),
        ("response.output_item.added", None, None),
        ("response.shell_call_command.added", 0, ""),
        ("response.shell_call_command.delta", 0, "ls"),
        ("response.shell_call_command.done", 0, "ls"),
        ("response.shell_call_command.added", 1, ""),
        ("response.shell_call_command.delta", 1, "cat greeting.txt"),
        ("response.shell_call_command.done", 1, "cat greeting.txt"),
        ("response.output_item.done", None, None),
        ("response.output_item.added", None, None), ("response.output_item.done", None, None),
        ("response.completed", None, None)]
    assert {e["output_index"] for e in events[3:9]} == {command["output_index"]}
    shell, patch = final.output
    assert shell.model_dump(mode="json", exclude_unset=True) == {
        "id": shell.id, "type": "shell_call", "call_id": "call_0",
        "action": {"commands": ["ls", "cat greeting.txt"], "timeout_ms": None,
                   "max_output_length": None},
        "environment": {"type": "local"}, "status": "completed"}
    assert patch.model_dump(mode="json", exclude_unset=True) == {
        "id": patch.id, "type": "apply_patch_call", "call_id": "call_1",
        "operation": PATCH_ARGUMENTS, "status": "completed"}
    assert [t["function"]["name"] for t in clean_upstream.requests()[-1]["body"]["tools"]] == [
        "shell", "apply_patch"]

    answer = openai_client.responses.create(
        model="fake-echo", previous_response_id=final.id,
        tools=[SHELL, {"type": "apply_patch"}], input=[
            {"type": "shell_call_output", "call_id": "call_0", "output": [
                {"stdout": "greeting.txt\n", "stderr": "",
                 "outcome": {"type": "exit", "exit_code": 0}},
                {"stdout": "Hello\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}]},
            {"type": "apply_patch_call_output", "call_id": "call_1", "status": "completed",
             "output": "Updated greeting.txt"}])
    validate_response(answer.model_dump(mode="json", exclude_unset=True))
    assert clean_upstream.requests()[-1]["body"]["messages"] == [
        {"role": "user", "content": prompt},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_0", "type": "function", "function": {
                "name": "shell", "arguments": json.dumps(SHELL_ARGUMENTS)}},
            {"id": "call_1", "type": "function", "function": {
                "name": "apply_patch", "arguments": json.dumps(PATCH_ARGUMENTS)}}]},
        {"role": "tool", "tool_call_id": "call_0",
         "content": "greeting.txt\nexit code: 0\n\nHello\nexit code: 0"},
        {"role": "tool", "tool_call_id": "call_1", "content": "completed: Updated greeting.txt"}]
    assert answer.status == "completed"


def test_a_local_shell_round_trip_without_streaming(openai_client, clean_upstream):
    first = openai_client.responses.create(
        model="fake-tool-caller", tools=[{"type": "local_shell"}],
        input='call local_shell {"command": ["ls", "-a"], "working_directory": "/w"}')
    validate_response(first.model_dump(mode="json", exclude_unset=True))
    (call,) = first.output
    assert (call.type, call.call_id, call.action.command, call.action.working_directory,
            call.status) == ("local_shell_call", "call_0", ["ls", "-a"], "/w", "completed")

    second = openai_client.responses.create(
        model="fake-tool-caller", previous_response_id=first.id,
        tools=[{"type": "local_shell"}],
        input=[{"type": "local_shell_call_output", "id": "call_0", "output": ". .. a.txt"}])
    assert second.output_text == "Results: . .. a.txt"
    listed = openai_client.responses.input_items.list(second.id).data
    assert [(item.type, item.call_id if hasattr(item, "call_id") else item.id)
            for item in listed] == [("local_shell_call_output", "call_0")]


def test_an_output_whose_call_is_nowhere_is_a_400(openai_client):
    from openai import BadRequestError

    with pytest.raises(BadRequestError) as raised:
        openai_client.responses.create(model="fake-echo", tools=[{"type": "apply_patch"}],
                                       input=[{"type": "apply_patch_call_output",
                                               "call_id": "call_zz", "status": "completed"}])
    assert raised.value.status_code == 400
    assert raised.value.body == {
        "message": "No tool call found for apply patch call output with call_id call_zz.",
        "type": "invalid_request_error", "param": "input", "code": None}


def test_a_function_output_with_an_image_reaches_the_model_after_the_tool_turn(
        openai_client, clean_upstream):
    image = "https://img.example/cat.png"
    answer = openai_client.responses.create(model="fake-echo", input=[
        {"type": "function_call", "call_id": "call_i", "name": "snap", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_i", "output": [
            {"type": "input_text", "text": "A cat:"},
            {"type": "input_image", "image_url": image}]}])
    assert answer.status == "completed"
    assert clean_upstream.requests()[-1]["body"]["messages"] == [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_i", "type": "function",
             "function": {"name": "snap", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_i", "content": "A cat:\n[image 1]"},
        {"role": "user", "content": [
            {"type": "text", "text": "The images in the output of tool call call_i:"},
            {"type": "image_url", "image_url": {"url": image, "detail": "auto"}}]}]
    listed = openai_client.responses.input_items.list(answer.id, order="asc").data
    assert [part.type for part in listed[1].output] == ["input_text", "input_image"]


def test_a_client_tool_search_loads_a_deferred_function(openai_client, clean_upstream):
    lookup = {"type": "function", "name": "lookup", "description": "Find an order.",
              "parameters": {"type": "object", "properties": {"id": {"type": "string"}},
                             "required": ["id"], "additionalProperties": False},
              "strict": True}
    tools = [{"type": "tool_search", "execution": "client"}, {**lookup, "defer_loading": True}]
    first = openai_client.responses.create(model="fake-tool-caller", tools=tools,
                                           input='call tool_search {"query": "orders"}')
    validate_response(first.model_dump(mode="json", exclude_unset=True))
    (call,) = first.output
    assert (call.type, call.call_id, call.execution, call.arguments) == (
        "tool_search_call", "call_0", "client", {"query": "orders"})
    assert [t["function"]["name"] for t in clean_upstream.requests()[-1]["body"]["tools"]] == [
        "tool_search"]

    second = openai_client.responses.create(
        model="fake-tool-caller", previous_response_id=first.id, tools=tools,
        input=[{"type": "tool_search_output", "call_id": "call_0", "execution": "client",
                "status": "completed", "tools": [lookup]}])
    assert second.output_text == "Results: Tools loaded, callable from now on: lookup."
    assert [t["function"]["name"] for t in clean_upstream.requests()[-1]["body"]["tools"]] == [
        "tool_search", "lookup"]


def test_a_shell_call_over_a_websocket_continued_without_storing(production, tenant_key,
                                                                  clean_upstream):
    from tests.websocket_client import checked_turn, open_socket

    prompt = f"call shell {json.dumps(SHELL_ARGUMENTS)}"
    with open_socket(production, tenant_key) as ws:
        events, first = checked_turn(ws, model="fake-tool-caller", store=False, input=prompt,
                                     tools=[SHELL])
        _, second = checked_turn(ws, model="fake-tool-caller", store=False, tools=[SHELL],
                                 previous_response_id=first["id"], input=[
                                     {"type": "shell_call_output", "call_id": "call_0",
                                      "output": [{"stdout": "", "stderr": "no such file\n",
                                                  "outcome": {"type": "exit",
                                                              "exit_code": 1}}]}])
    assert [e["type"] for e in events] == [
        "response.created", "response.in_progress", "response.output_item.added",
        *["response.shell_call_command.added", "response.shell_call_command.delta",
          "response.shell_call_command.done"] * 2,
        "response.output_item.done", "response.completed"]
    assert first["output"][0]["action"]["commands"] == SHELL_ARGUMENTS["commands"]
    assert second["output"][0]["content"][0]["text"] == (
        "Results: stderr:\nno such file\nexit code: 1")
    assert clean_upstream.requests()[-1]["body"]["messages"][1:] == [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_0", "type": "function", "function": {
                "name": "shell", "arguments": json.dumps(SHELL_ARGUMENTS)}}]},
        {"role": "tool", "tool_call_id": "call_0",
         "content": "stderr:\nno such file\nexit code: 1"}]


def test_a_compaction_trigger_compacts_before_the_answer(openai_client, clean_upstream):
    from openai import BadRequestError

    first = openai_client.responses.create(model="fake-echo", input="alpha beta")
    clean_upstream.clear()
    answer = openai_client.responses.create(
        model="fake-echo", previous_response_id=first.id,
        input=[{"role": "user", "content": "gamma"}, {"type": "compaction_trigger"}])
    assert [item.type for item in answer.output] == ["compaction", "message"]
    summary, reply = [request["body"] for request in clean_upstream.requests()]
    assert (summary["stream"], reply["stream"]) == (True, True)
    history = [{"role": "user", "content": "alpha beta"},
               {"role": "assistant", "content": "user: alpha beta"},
               {"role": "user", "content": "gamma"}]
    assert summary["messages"] == [*history, {"role": "user", "content": COMPACTION_PROMPT}]
    # the summary stands for the whole history, as when a threshold is crossed
    assert reply["messages"] == [{"role": "system",
                                  "content": COMPACTION_PREFIX + summary_of(history)}]
    with pytest.raises(BadRequestError) as raised:
        openai_client.responses.create(model="fake-echo", input=[
            {"type": "compaction_trigger"}, {"role": "user", "content": "late"}])
    assert raised.value.body["param"] == "input[0]"
