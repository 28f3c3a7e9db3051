"""The client-run tools of the 2026 schema (`shell`, `local_shell`, `apply_patch`), pure parts:
the create body's tools and items, the functions offered upstream, the history sent back, and
the exact events of each call (judged by both schema oracles and the invariant checker,
through the state machine tests' `translate`); stored items checked by openai's models."""
import json

import pytest
from openai.types.responses import (
    ResponseApplyPatchToolCall, ResponseApplyPatchToolCallOutput, ResponseFunctionShellToolCall,
    ResponseFunctionShellToolCallOutput,
)
from openai.types.responses.response_output_item import LocalShellCall

from responses_app.create.request import parse_create_request
from responses_app.errors import InvalidRequest
from responses_app.translation.chat_request import build_chat_request
from tests.test_state_machine import chunk, text_message, translate

TOOLS = [{"type": "shell", "environment": {"type": "local"}}, {"type": "local_shell"},
         {"type": "apply_patch"}]
CLIENT_TOOLS = {"shell": "shell", "local_shell": "local_shell", "apply_patch": "apply_patch"}
DIFF = "@@\n-Hello\n+Hello, patched\n"


def build(**fields):
    request = parse_create_request({"model": "m", "input": "hi", **fields})
    return build_chat_request(model="m", instructions=None, items=request.input_items,
                              params=request.params, include=[], max_tokens_param="max_tokens")


# --- the create body ------------------------------------------------------------------------

def test_the_tools_are_stored_and_a_shell_without_environment_is_local():
    params = parse_create_request({"model": "m", "input": "hi", "tools": [
        {"type": "shell"}, {"type": "local_shell"}, {"type": "apply_patch"}],
        "tool_choice": {"type": "apply_patch"}}).params
    assert params["tools"] == TOOLS
    assert params["tool_choice"] == {"type": "apply_patch"}


@pytest.mark.parametrize("body, param, message", [
    ({"tools": [{"type": "shell", "environment": {"type": "container_auto"}}]},
     "tools[0].environment",
     "Invalid value for 'tools[0].environment': a shell tool runs on the client here "
     "(environment {'type': 'local'}); 'container_auto' names a container this gateway does "
     "not have."),
    ({"tools": [{"type": "apply_patch"}, {"type": "custom", "name": "apply_patch"}]}, "tools",
     "At most one 'apply_patch' tool per request, and no function or custom tool named "
     "'apply_patch' beside it (it is offered to the model as a function of that name)."),
    ({"tools": [{"type": "apply_patch"}], "tool_choice": {"type": "shell"}}, "tool_choice",
     "Tool choice 'shell' names a tool this request does not offer."),
    ({"input": [{"type": "apply_patch_call", "call_id": "c", "status": "completed",
                 "operation": {"type": "rename_file", "path": "a"}}]},
     "input[0].operation.type",
     "Invalid value for 'input[0].operation.type': must be one of ['create_file', "
     "'update_file', 'delete_file']."),
    ({"input": [{"type": "shell_call_output", "call_id": "c",
                 "output": [{"stdout": "", "stderr": "", "outcome": {"type": "exit"}}]}]},
     "input[0].output[0].outcome",
     "Invalid value for 'input[0].output[0].outcome': must be {'type': 'exit', 'exit_code': "
     "int} or {'type': 'timeout'}."),
    ({"input": [{"type": "apply_patch_call_output", "call_id": "c"}]}, "input[0].status",
     "Invalid value for 'input[0].status': must be one of ['completed', 'failed']."),
])
def test_bad_tools_and_items_are_400s_naming_the_field(body, param, message):
    with pytest.raises(InvalidRequest) as caught:
        parse_create_request({"model": "m", "input": "hi", **body})
    assert (caught.value.status, caught.value.param, caught.value.message) == (400, param, message)


INPUT = [
    {"role": "user", "content": "go"},
    {"type": "shell_call", "id": "sh_1", "call_id": "call_s", "status": "completed",
     "action": {"commands": ["ls", "cat a.txt"], "timeout_ms": 5000}},
    {"type": "shell_call_output", "id": "sho_1", "call_id": "call_s", "output": [
        {"stdout": "a.txt\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}},
        {"stdout": "", "stderr": "denied\n", "outcome": {"type": "exit", "exit_code": 1}}]},
    {"type": "local_shell_call", "id": "lsh_1", "call_id": "call_l", "status": "completed",
     "action": {"type": "exec", "command": ["ls", "-a"], "env": {},
                "working_directory": "/w"}},
    {"type": "local_shell_call_output", "id": "call_l", "output": '{"output": ".\\n.."}'},
    {"type": "apply_patch_call", "id": "apc_1", "call_id": "call_p", "status": "completed",
     "operation": {"type": "update_file", "path": "a.txt", "diff": DIFF}},
    {"type": "apply_patch_call_output", "id": "apco_1", "call_id": "call_p",
     "status": "failed", "output": "a.txt: no such file"},
]


def test_the_items_are_stored_in_openais_shapes():
    shell, shell_out, local, local_out, patch, patch_out = parse_create_request(
        {"model": "m", "input": INPUT}).input_items[1:]
    assert shell == {"id": "sh_1", "type": "shell_call", "call_id": "call_s",
                     "action": {"commands": ["ls", "cat a.txt"], "timeout_ms": 5000,
                                "max_output_length": None},
                     "environment": {"type": "local"}, "status": "completed"}
    assert local_out["call_id"] == "call_l" and local_out["id"].startswith("lsho_")
    assert patch_out == {"id": "apco_1", "type": "apply_patch_call_output", "call_id": "call_p",
                         "status": "failed", "output": "a.txt: no such file"}
    ResponseFunctionShellToolCall.model_validate(shell)
    ResponseFunctionShellToolCallOutput.model_validate(shell_out)
    LocalShellCall.model_validate(local)
    ResponseApplyPatchToolCall.model_validate(patch)
    ResponseApplyPatchToolCallOutput.model_validate(patch_out)


# --- upstream request -----------------------------------------------------------------------

def test_each_tool_is_offered_as_a_function_of_its_name():
    chat = build(tools=TOOLS, tool_choice={"type": "shell"})
    assert [(t["function"]["name"], t["function"]["parameters"]["required"])
            for t in chat.body["tools"]] == [
        ("shell", ["commands"]), ("local_shell", ["command"]), ("apply_patch", ["type", "path"])]
    assert chat.body["tools"][0]["function"]["parameters"]["properties"]["commands"] == {
        "type": "array", "items": {"type": "string"},
        "description": "The command lines to run, in order."}
    assert chat.body["tool_choice"] == {"type": "function", "function": {"name": "shell"}}
    assert chat.client_tools == CLIENT_TOOLS


def test_the_calls_and_outputs_go_back_as_tool_turns():
    chat = build(input=INPUT, tools=TOOLS)

    def turn(call_id, name, arguments, content):
        return [{"role": "assistant", "content": None, "tool_calls": [
                    {"id": call_id, "type": "function",
                     "function": {"name": name, "arguments": arguments}}]},
                {"role": "tool", "tool_call_id": call_id, "content": content}]

    assert chat.body["messages"] == [
        {"role": "user", "content": "go"},
        *turn("call_s", "shell", '{"commands": ["ls", "cat a.txt"], "timeout_ms": 5000}',
              "a.txt\nexit code: 0\n\nstderr:\ndenied\nexit code: 1"),
        *turn("call_l", "local_shell", '{"command": ["ls", "-a"], "working_directory": "/w"}',
              '{"output": ".\\n.."}'),
        *turn("call_p", "apply_patch",
              json.dumps({"type": "update_file", "path": "a.txt", "diff": DIFF}),
              "failed: a.txt: no such file")]


# --- the events -----------------------------------------------------------------------------

def call_piece(name, arguments, index=0, call_id="call_x"):
    call = {"index": index, "function": {"arguments": arguments}}
    if name:
        call.update(id=call_id, type="function")
        call["function"]["name"] = name
    return chunk({"tool_calls": [call]})


def test_a_shell_call_announces_its_commands():
    chunks = [chunk({"role": "assistant", "content": "Looking."}),
              call_piece("shell", '{"commands": ["ls", '), call_piece(None, '"pwd"]}'),
              chunk({}, "tool_calls")]

    events, response = translate(chunks, client_tools=CLIENT_TOOLS)

    call = {"id": "sh_1", "type": "shell_call", "call_id": "call_x",
            "action": {"commands": ["ls", "pwd"], "timeout_ms": None, "max_output_length": None},
            "environment": {"type": "local"}, "status": "completed"}
    command = {"output_index": 1}
    assert [{k: v for k, v in e.items() if k != "sequence_number"} for e in events[8:]] == [
        {"type": "response.output_item.added", "output_index": 1, "item": {
            **call, "action": {**call["action"], "commands": []}, "status": "in_progress"}},
        {"type": "response.shell_call_command.added", **command, "command_index": 0,
         "command": ""},
        {"type": "response.shell_call_command.delta", **command, "command_index": 0,
         "delta": "ls"},
        {"type": "response.shell_call_command.done", **command, "command_index": 0,
         "command": "ls"},
        {"type": "response.shell_call_command.added", **command, "command_index": 1,
         "command": ""},
        {"type": "response.shell_call_command.delta", **command, "command_index": 1,
         "delta": "pwd"},
        {"type": "response.shell_call_command.done", **command, "command_index": 1,
         "command": "pwd"},
        {"type": "response.output_item.done", "output_index": 1, "item": call},
        {"type": "response.completed", "response": response}]
    assert response["output"] == [text_message("msg_0", "Looking."), call]


def test_a_local_shell_call_and_a_patch_in_one_turn():
    """The patch, announced once its arguments are whole, comes after the shell call."""
    arguments = json.dumps({"type": "create_file", "path": "n.txt", "diff": "+new\n"})
    chunks = [call_piece("apply_patch", arguments[:9], 0, "call_p"),
              call_piece("local_shell", '{"command": "ls -a"}', 1, "call_l"),
              call_piece(None, arguments[9:], 0), chunk({}, "tool_calls")]

    events, response = translate(chunks, client_tools=CLIENT_TOOLS)

    local = {"id": "lsh_1", "type": "local_shell_call", "call_id": "call_l", "action": {
        "type": "exec", "command": ["bash", "-lc", "ls -a"], "env": {}, "timeout_ms": None,
        "user": None, "working_directory": None}, "status": "completed"}
    patch = {"id": "apc_0", "type": "apply_patch_call", "call_id": "call_p", "operation": {
        "type": "create_file", "path": "n.txt", "diff": "+new\n"}, "status": "completed"}
    assert [(e["type"], e.get("output_index")) for e in events[2:]] == [
        ("response.output_item.added", 0), ("response.output_item.done", 0),
        ("response.output_item.added", 1), ("response.output_item.done", 1),
        ("response.completed", None)]
    assert events[2]["item"]["action"]["command"] == []
    assert events[4]["item"] == {**patch, "status": "in_progress"}
    assert response["output"] == [local, patch]


def test_calls_cut_short_end_incomplete_and_a_half_patch_is_never_announced():
    chunks = [call_piece("shell", '{"commands": ["ls"', 0, "call_s"),
              call_piece("apply_patch", '{"type": "upd', 1, "call_p")]

    events, response = translate(chunks, client_tools=CLIENT_TOOLS,
                                 fail=("server_error", "upstream died"))

    assert [e["type"] for e in events[2:]] == [
        "response.output_item.added", "response.output_item.done", "response.failed"]
    assert response["output"] == [{
        "id": "sh_0", "type": "shell_call", "call_id": "call_s",
        "action": {"commands": [], "timeout_ms": None, "max_output_length": None},
        "environment": {"type": "local"}, "status": "incomplete"}]


@pytest.mark.parametrize("arguments, commands", [
    ('{"command": "git status"}', ["git status"]),   # one command, named in the singular
    ("ls -la", ["ls -la"]),                           # not JSON: the command itself
    ('["make", "make test"]', ["make", "make test"]),
])
def test_other_shell_argument_shapes(arguments, commands):
    _, response = translate([call_piece("shell", arguments), chunk({}, "tool_calls")],
                            client_tools=CLIENT_TOOLS)
    assert response["output"][0]["action"]["commands"] == commands


# --- tool search (client execution), deferred tools and additional_tools ---------------------

LOOKUP = {"type": "function", "name": "lookup", "description": "Find an order.",
          "parameters": {"type": "object", "properties": {"id": {"type": "string"}}},
          "defer_loading": True}
SEARCH = {"type": "tool_search", "execution": "client",
          "parameters": {"type": "object", "properties": {"goal": {"type": "string"}}}}


def test_a_client_tool_search_is_offered_and_deferred_functions_are_not():
    chat = build(tools=[SEARCH, LOOKUP])
    assert chat.body["tools"] == [{"type": "function", "function": {
        "name": "tool_search", "description": "Searches for more tools to use; the tools "
        "found are available from the next turn on.", "parameters": SEARCH["parameters"]}}]
    assert chat.client_tools == {"tool_search": "tool_search"}


def test_a_tool_search_call_streams_as_its_item():
    _, response = translate([call_piece("tool_search", '{"goal": "orders"}'),
                             chunk({}, "tool_calls")],
                            client_tools={"tool_search": "tool_search"})
    assert response["output"] == [{"id": "tsc_0", "type": "tool_search_call",
                                   "call_id": "call_x", "execution": "client",
                                   "arguments": {"goal": "orders"}, "status": "completed"}]


def test_tools_loaded_by_a_search_or_given_in_an_item_are_offered_from_then_on():
    loaded = {k: v for k, v in LOOKUP.items() if k != "defer_loading"}
    chat = build(tools=[SEARCH, LOOKUP], input=[
        {"role": "user", "content": "where is my order?"},
        {"type": "tool_search_call", "call_id": "call_s", "arguments": {"goal": "orders"},
         "status": "completed"},
        {"type": "tool_search_output", "call_id": "call_s", "status": "completed",
         "tools": [loaded]},
        {"type": "additional_tools", "role": "developer",
         "tools": [{"type": "custom", "name": "note"}]}])
    assert [t["function"]["name"] for t in chat.body["tools"]] == [
        "tool_search", "lookup", "note"]
    assert chat.custom_tools == frozenset({"note"})
    assert chat.body["messages"][1:] == [
        {"role": "assistant", "content": None, "tool_calls": [{
            "id": "call_s", "type": "function",
            "function": {"name": "tool_search", "arguments": '{"goal": "orders"}'}}]},
        {"role": "tool", "tool_call_id": "call_s",
         "content": "Tools loaded, callable from now on: lookup."}]


def test_items_take_no_hosted_tools():
    with pytest.raises(InvalidRequest) as hosted:
        parse_create_request({"model": "m", "input": [
            {"type": "additional_tools", "role": "developer",
             "tools": [{"type": "web_search"}]}]})
    assert (hosted.value.param, hosted.value.message) == (
        "input[0].tools[0].type",
        "Invalid value for 'input[0].tools[0].type': 'web_search'; tools given in an item are "
        "among ['function', 'custom', 'namespace', 'shell', 'local_shell', 'apply_patch'].")
