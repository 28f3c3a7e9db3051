"""Codex CLI's code mode, the tool mode of the newest models in its bundled catalog (0.171:
`tool_mode = "code_mode_only"` with `use_responses_lite`). Codex then sends no `tools`:
its tools come as an `additional_tools` input item, a `namespace` named `functions` holding
the custom (freeform) tool `exec`, JavaScript that reaches the others (exec_command,
apply_patch, ...) through a `tools` object. The model's shell calls and patches are made
inside that script.

The round trip: `functions.exec` goes upstream as a function `functions__exec` of one
string `input` (its Lark grammar in the description); the fake model (`fake-tool-caller`)
calls it with a script that runs a command and applies a patch; Codex gets a
`custom_tool_call` with `namespace: "functions"`, runs the script (the command and the
patch), sends the `custom_tool_call_output`, which goes upstream as a tool message; the
fake model quotes it. Same isolation as test_e2e_codex_cli: a fresh HOME, no network but
loopback; the catalog entry is Codex's own, only its slug changed."""
import json
import re
import shutil
import subprocess

import pytest

from tests.recording_proxy import RecordingProxy
from tests.test_e2e_codex_apply_patch import codex_exchanges
from tests.test_e2e_codex_cli import CODEX, codex_env, codex_exec

PATCH = ("*** Begin Patch\n*** Update File: greeting.txt\n@@\n-Hello\n+Hello, patched\n"
         "*** End Patch\n")
SCRIPT = ("const shell = await tools.exec_command(\n"
          "  {cmd: 'echo gateway > out.txt && cat out.txt'});\n"
          f"const patch = await tools.apply_patch({json.dumps(PATCH)});\n"
          "text(shell.output);\ntext(patch);\n")
ARGUMENTS = json.dumps({"input": SCRIPT})
# the script's output: exec_command's output, then apply_patch's result (an empty object)
RESULT = "Script completed\nWall time <t> seconds\nOutput:\ngateway\n{}"
INPUT_PARAMETERS = {"type": "object", "properties": {"input": {
    "type": "string", "description": "The raw input of the tool (free-form text)."}},
    "required": ["input"], "additionalProperties": False}


@pytest.fixture(scope="session")
def code_mode_model(node_clients, tmp_path_factory) -> dict:
    """The first code-mode entry of the pinned Codex's bundled catalog, as `fake-tool-caller`."""
    home = tmp_path_factory.mktemp("codex-code-mode-catalog")
    done = subprocess.run([shutil.which("node"), str(node_clients / CODEX), "debug", "models",
                           "--bundled"], capture_output=True, text=True, timeout=60,
                          env=codex_env(home, "none"), stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    model = next(model for model in json.loads(done.stdout)["models"]
                 if model.get("tool_mode") == "code_mode_only" and model["use_responses_lite"]
                 and not model["experimental_supported_tools"])
    return {**model, "slug": "fake-tool-caller", "display_name": "fake-tool-caller"}


def normalized(text: str) -> str:
    """A code-mode output with its wall time blanked."""
    return re.sub(r"Wall time [0-9.]+ seconds", "Wall time <t> seconds", text)


def exec_tool(request: dict) -> dict:
    """The `exec` tool of the `functions` namespace Codex sent in its additional_tools."""
    assert "tools" not in request
    offered, *_ = request["input"]
    assert (offered["type"], offered["role"]) == ("additional_tools", "developer")
    functions = next(tool for tool in offered["tools"] if tool["name"] == "functions")
    assert functions["type"] == "namespace"
    return next(tool for tool in functions["tools"] if tool["name"] == "exec")


def test_codex_code_mode_runs_a_shell_call_and_a_patch_in_its_namespaced_exec_tool(
        node_clients, code_mode_model, tmp_path, production, tenant_key, clean_upstream):
    work = tmp_path / "work"
    work.mkdir()
    (work / "greeting.txt").write_text("Hello\n")
    prompt = f"call functions__exec {ARGUMENTS}"
    with RecordingProxy(production.base_url.removesuffix("/v1")) as proxy:
        command, change, answer = codex_exec(node_clients, code_mode_model, tmp_path,
                                             f"{proxy.base_url}/v1", tenant_key, prompt)
    assert (work / "out.txt").read_text() == "gateway\n"
    assert (work / "greeting.txt").read_text() == "Hello, patched\n"
    assert {key: command[key] for key in ("type", "aggregated_output", "exit_code", "status")} \
        == {"type": "command_execution", "aggregated_output": "gateway\n", "exit_code": 0,
            "status": "completed"}
    assert (change["type"], change["status"], change["changes"]) == (
        "file_change", "completed", [{"path": str(work / "greeting.txt"), "kind": "update"}])
    assert (answer["type"], normalized(answer["text"])) == ("agent_message", f"Results: {RESULT}")

    sent, ((events, first), (_, final)) = codex_exchanges(proxy)
    tool = exec_tool(sent[0])
    assert (tool["type"], tool["format"]["type"], tool["format"]["syntax"]) == (
        "custom", "grammar", "lark")
    upstream_first, upstream_second = (request["body"] for request in clean_upstream.requests())
    offered = upstream_first["tools"][0]["function"]
    assert (offered["name"], offered["parameters"]) == ("functions__exec", INPUT_PARAMETERS)
    assert offered["description"] == (
        f"{tool['description']}\n\nThe `input` argument must be text matching this lark "
        f"grammar:\n{tool['format']['definition']}")

    call = first["output"][0]
    assert first["output"] == [{"id": call["id"], "type": "custom_tool_call",
                                "status": "completed", "call_id": "call_0", "name": "exec",
                                "namespace": "functions", "input": SCRIPT}]
    assert [event["type"] for event in events] == [
        "response.created", "response.in_progress", "response.output_item.added",
        "response.custom_tool_call_input.delta", "response.custom_tool_call_input.delta",
        "response.custom_tool_call_input.done", "response.output_item.done",
        "response.completed"]
    assert "".join(event["delta"] for event in events[3:5]) == SCRIPT
    assert sent[1]["input"][:-2] == sent[0]["input"]
    echoed, output = sent[1]["input"][-2:]
    assert echoed == call
    assert (output["type"], output["call_id"]) == ("custom_tool_call_output", "call_0")
    assert normalized("".join(part["text"] for part in output["output"])) == RESULT

    assert upstream_second["messages"][:-2] == upstream_first["messages"]
    assert upstream_second["messages"][-2] == {
        "role": "assistant", "content": None, "tool_calls": [
            {"id": "call_0", "type": "function",
             "function": {"name": "functions__exec", "arguments": ARGUMENTS}}]}
    tool_message = upstream_second["messages"][-1]
    assert {**tool_message, "content": normalized(tool_message["content"])} == {
        "role": "tool", "tool_call_id": "call_0", "content": RESULT}
    assert [(item["type"], [normalized(part["text"]) for part in item["content"]])
            for item in final["output"]] == [("message", [f"Results: {RESULT}"])]
