"""Codex CLI's own apply_patch path, through custom tools: the model catalog gives the model
`apply_patch_tool_type = "freeform"`, so Codex 0.171 offers apply_patch as a custom tool
with a Lark grammar. A recording proxy between Codex and the gateway shows what Codex sent
and was answered; the fake upstream shows what the backend saw.

The round trip: the custom tool goes upstream as a function of one string `input` (the
grammar in its description); the fake model (`fake-tool-caller`) calls it with a patch;
Codex gets a `custom_tool_call` (streamed as `custom_tool_call_input` deltas), applies the
patch in its workspace and sends a `custom_tool_call_output`, which goes upstream as a tool
message; the fake model quotes it as the final answer. Same isolation as
test_e2e_codex_cli: a fresh HOME, no network but loopback."""
import json

from tests.oracles import check_sse_stream
from tests.recording_proxy import RecordingProxy
from tests.test_e2e_codex_cli import TOOLS_OFFERED, codex_exec, codex_model, normalized

__all__ = ["codex_model"]  # the catalog fixture, shared with test_e2e_codex_cli

DESCRIPTION = ("The `apply_patch` tool can be used to edit files. This is a FREEFORM tool, "
               "so do not wrap the patch in JSON.")
GRAMMAR = """start: begin_patch hunk+ end_patch
begin_patch: "*** Begin Patch" LF
end_patch: "*** End Patch" LF?

hunk: add_hunk | delete_hunk | update_hunk
add_hunk: "*** Add File: " filename LF add_line+
delete_hunk: "*** Delete File: " filename LF
update_hunk: "*** Update File: " filename LF change_move? change?

filename: /(.+)/
add_line: "+" /(.*)/ LF -> line

change_move: "*** Move to: " filename LF
change: (change_context | change_line)+ eof_line?
change_context: ("@@" | "@@ " /(.+)/) LF
change_line: ("+" | "-" | " ") /(.*)/ LF
eof_line: "*** End of File" LF

%import common.LF
"""
CUSTOM_TOOL = {"type": "custom", "name": "apply_patch", "description": DESCRIPTION,
               "format": {"type": "grammar", "syntax": "lark", "definition": GRAMMAR}}
UPSTREAM_TOOL = {"type": "function", "function": {
    "name": "apply_patch",
    "parameters": {"type": "object", "properties": {"input": {
        "type": "string", "description": "The raw input of the tool (free-form text)."}},
        "required": ["input"], "additionalProperties": False},
    "description": f"{DESCRIPTION}\n\nThe `input` argument must be text matching this lark "
                   f"grammar:\n{GRAMMAR}"}}
PATCH = ("*** Begin Patch\n*** Update File: greeting.txt\n@@\n-Hello\n+Hello, patched\n"
         "*** End Patch\n")
ARGUMENTS = json.dumps({"input": PATCH})
RESULT = ("Exit code: 0\nWall time: <t> seconds\nOutput:\n"
          "Success. Updated the following files:\nM greeting.txt\n")


def codex_exchanges(proxy: RecordingProxy) -> tuple[list[dict], list[tuple[list, dict]]]:
    """The two requests Codex sent to /v1/responses, and each stream's (events, response)."""
    assert [(exchange.method, exchange.path, exchange.status)
            for exchange in proxy.exchanges] == [("POST", "/v1/responses", 200)] * 2
    return ([json.loads(exchange.body) for exchange in proxy.exchanges],
            [check_sse_stream(exchange.answer) for exchange in proxy.exchanges])


def assert_call_streamed(events: list[dict], response: dict) -> dict:
    """The first stream: the call, as a custom_tool_call whose input streams in two pieces
    (the fake model sends the arguments in two halves); return the call item."""
    call = response["output"][0]
    assert response["output"] == [{"id": call["id"], "type": "custom_tool_call",
                                   "status": "completed", "call_id": "call_0",
                                   "name": "apply_patch", "input": PATCH}]
    added = {**call, "status": "in_progress", "input": ""}
    head = {"item_id": call["id"], "output_index": 0}
    assert events[2:-1] == [
        {"type": "response.output_item.added", "output_index": 0, "item": added,
         "sequence_number": 2},
        {"type": "response.custom_tool_call_input.delta", **head,
         "delta": "*** Begin Patch\n*** Update File: greetin", "sequence_number": 3},
        {"type": "response.custom_tool_call_input.delta", **head,
         "delta": "g.txt\n@@\n-Hello\n+Hello, patched\n*** End Patch\n", "sequence_number": 4},
        {"type": "response.custom_tool_call_input.done", **head, "input": PATCH,
         "sequence_number": 5},
        {"type": "response.output_item.done", "output_index": 0, "item": call,
         "sequence_number": 6}]
    assert [event["type"] for event in events[:2] + events[-1:]] == [
        "response.created", "response.in_progress", "response.completed"]
    return call


def assert_upstream_round_trip(upstream, prompt: str) -> None:
    """Upstream: apply_patch as a function of one string; then the call and its output as
    the assistant's tool call and a tool message."""
    first, second = (request["body"] for request in upstream.requests())
    names = [tool["function"]["name"] for tool in first["tools"]]
    assert names == TOOLS_OFFERED[:3] + ["apply_patch"] + TOOLS_OFFERED[3:]
    assert first["tools"][3] == UPSTREAM_TOOL
    assert second["tools"] == first["tools"]
    assert first["messages"][-1] == {"role": "user", "content": prompt}
    assert second["messages"][:4] == first["messages"]
    call, output = second["messages"][4:]
    assert call == {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_0", "type": "function",
         "function": {"name": "apply_patch", "arguments": ARGUMENTS}}]}
    assert {**output, "content": normalized(output["content"])} == {
        "role": "tool", "tool_call_id": "call_0", "content": RESULT}


def test_codex_applies_the_patch_sent_to_its_freeform_apply_patch_tool(
        node_clients, codex_model, tmp_path, production, tenant_key, clean_upstream):
    work = tmp_path / "work"
    work.mkdir()
    (work / "greeting.txt").write_text("Hello\n")
    prompt = f"call apply_patch {ARGUMENTS}"
    freeform = {**codex_model, "apply_patch_tool_type": "freeform"}
    with RecordingProxy(production.base_url.removesuffix("/v1")) as proxy:
        change, answer = codex_exec(node_clients, freeform, tmp_path, f"{proxy.base_url}/v1",
                                    tenant_key, prompt)
    assert (work / "greeting.txt").read_text() == "Hello, patched\n"
    assert (change["type"], change["status"], change["changes"]) == (
        "file_change", "completed", [{"path": str(work / "greeting.txt"), "kind": "update"}])
    assert (answer["type"], normalized(answer["text"])) == ("agent_message", f"Results: {RESULT}")

    sent, ((events, first), (_, final)) = codex_exchanges(proxy)
    assert [tool for tool in sent[0]["tools"] if tool.get("name") == "apply_patch"] == [
        CUSTOM_TOOL]
    call = assert_call_streamed(events, first)
    assert sent[1]["input"][:-2] == sent[0]["input"]
    echoed, output = sent[1]["input"][-2:]
    assert echoed == call
    assert {**output, "id": None, "output": normalized(output["output"])} == {
        "type": "custom_tool_call_output", "id": None, "call_id": "call_0", "output": RESULT}
    assert output["id"].startswith("ctco_")
    assert_upstream_round_trip(clean_upstream, prompt)
    assert final["status"] == "completed"
    assert [(item["type"], [normalized(part["text"]) for part in item["content"]])
            for item in final["output"]] == [("message", [f"Results: {RESULT}"])]


ADD_PATCH = ("*** Begin Patch\n*** Add File: notes/héllo.txt\n+Grüße ✓ 🙂\n"
             "+\"quoted\" \\ back\n*** End Patch\n")
SHELL_RESULT = ("Chunk ID: <id>\nWall time: <t> seconds\nProcess exited with code 0\n"
                "Original token count: 1\nOutput:\nhi\n")
ADD_RESULT = ("Exit code: 0\nWall time: <t> seconds\nOutput:\n"
              "Success. Updated the following files:\nA notes/héllo.txt\n")


def test_codex_runs_a_shell_call_and_a_freeform_patch_of_one_response(
        node_clients, codex_model, tmp_path, production, tenant_key, clean_upstream):
    """Both kinds of call in one response, the patch non-ASCII (sent \\u-escaped, split by the
    fake model mid-string) and with quotes and a backslash: each output goes back as its own
    kind of item and then as its own tool message."""
    (tmp_path / "work").mkdir()
    shell = json.dumps({"cmd": "echo hi"})
    prompt = f"call exec_command {shell}\ncall apply_patch {json.dumps({'input': ADD_PATCH})}"
    freeform = {**codex_model, "apply_patch_tool_type": "freeform"}
    with RecordingProxy(production.base_url.removesuffix("/v1")) as proxy:
        *_, answer = codex_exec(node_clients, freeform, tmp_path, f"{proxy.base_url}/v1",
                                tenant_key, prompt)
    assert (tmp_path / "work" / "notes" / "héllo.txt").read_text() == (
        "Grüße ✓ 🙂\n\"quoted\" \\ back\n")
    assert normalized(answer["text"]) == f"Results: {SHELL_RESULT} | {ADD_RESULT}"
    sent, ((_, first), _) = codex_exchanges(proxy)
    assert [(item["type"], item["call_id"]) for item in sent[1]["input"][-4:]] == [
        ("function_call", "call_0"), ("custom_tool_call", "call_1"),
        ("function_call_output", "call_0"), ("custom_tool_call_output", "call_1")]
    assert sent[1]["input"][-3] == first["output"][1]
    assert first["output"][1]["input"] == ADD_PATCH
    messages = clean_upstream.requests()[1]["body"]["messages"][4:]
    assert messages[0] == {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_0", "type": "function",
         "function": {"name": "exec_command", "arguments": shell}},
        {"id": "call_1", "type": "function", "function": {
            "name": "apply_patch",
            "arguments": json.dumps({"input": ADD_PATCH}, ensure_ascii=False)}}]}
    assert [{**message, "content": normalized(message["content"])}
            for message in messages[1:]] == [
        {"role": "tool", "tool_call_id": "call_0", "content": SHELL_RESULT},
        {"role": "tool", "tool_call_id": "call_1", "content": ADD_RESULT}]
