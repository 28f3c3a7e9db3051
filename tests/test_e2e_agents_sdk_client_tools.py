"""The OpenAI Agents SDK's own `ShellTool` (local) and `ApplyPatchTool` against the shared
deployment and a Chat Completions model (the fake upstream's `fake-tool-caller`): the SDK
reads our `shell_call` and `apply_patch_call` items, runs its executor and editor, and sends
its `shell_call_output` and `apply_patch_call_output` back, which reach the model as tool
messages; the exact messages and the SDK's final output are asserted, with `Runner.run` and
with `Runner.run_streamed` (the SDK reading the calls from our stream's events)."""
import asyncio
import json

import pytest

from agents import (Agent, ApplyPatchTool, OpenAIResponsesModel, RunConfig, Runner, ShellTool,
                    set_tracing_disabled)
from agents.editor import ApplyPatchOperation, ApplyPatchResult
from agents.tool import ShellCallOutcome, ShellCommandOutput, ShellCommandRequest, ShellResult
from openai import AsyncOpenAI

set_tracing_disabled(True)  # the SDK's tracing exports to OpenAI's servers otherwise

SHELL_ARGUMENTS = {"commands": ["cat greeting.txt"]}
PATCH_ARGUMENTS = {"type": "update_file", "path": "greeting.txt",
                   "diff": "@@\n-Hello\n+Hello, patched\n"}
PROMPT = (f"call shell {json.dumps(SHELL_ARGUMENTS)}\n"
          f"call apply_patch {json.dumps(PATCH_ARGUMENTS)}")


class Workspace:
    """The executor and the editor: what they were asked, and canned answers."""

    def __init__(self):
        self.commands: list[list[str]] = []
        self.operations: list[tuple] = []

    def run(self, request: ShellCommandRequest) -> ShellResult:
        self.commands.append(list(request.data.action.commands))
        return ShellResult(output=[ShellCommandOutput(
            stdout="Hello\n", outcome=ShellCallOutcome(type="exit", exit_code=0))])

    def create_file(self, operation: ApplyPatchOperation):
        raise AssertionError("no file is created here")

    def update_file(self, operation: ApplyPatchOperation) -> ApplyPatchResult:
        self.operations.append((operation.type, operation.path, operation.diff))
        return ApplyPatchResult(status="completed", output="Updated greeting.txt")

    def delete_file(self, operation: ApplyPatchOperation):
        raise AssertionError("no file is deleted here")


def raw_type(raw) -> str:
    return raw["type"] if isinstance(raw, dict) else raw.type


async def run_streamed(agent) -> tuple[object, list[tuple[str, str]]]:
    """`Runner.run_streamed`: the result and the (event name, item type) of each run item
    the SDK reported while the stream went on."""
    result = Runner.run_streamed(agent, PROMPT, run_config=RunConfig(tracing_disabled=True))
    seen = [(event.name, raw_type(event.item.raw_item))
            async for event in result.stream_events() if event.type == "run_item_stream_event"]
    return result, seen


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
def test_the_agents_sdk_runs_its_shell_and_apply_patch_tools(production, tenant_key,
                                                             clean_upstream, streamed):
    workspace = Workspace()
    client = AsyncOpenAI(base_url=production.base_url, api_key=tenant_key, max_retries=0)
    agent = Agent(name="Coder", instructions="Fix files.",
                  model=OpenAIResponsesModel("fake-tool-caller", client),
                  tools=[ShellTool(executor=workspace.run), ApplyPatchTool(editor=workspace)])

    if streamed:
        result, seen = asyncio.run(run_streamed(agent))
        assert seen == [("tool_called", "shell_call"), ("tool_called", "apply_patch_call"),
                        ("tool_output", "shell_call_output"),
                        ("tool_output", "apply_patch_call_output"),
                        ("message_output_created", "message")]
    else:
        result = asyncio.run(Runner.run(agent, PROMPT,
                                        run_config=RunConfig(tracing_disabled=True)))

    assert workspace.commands == [["cat greeting.txt"]]
    assert workspace.operations == [("update_file", "greeting.txt", PATCH_ARGUMENTS["diff"])]
    assert result.final_output == "Results: Hello\nexit code: 0 | completed: Updated greeting.txt"
    first, second = [request["body"] for request in clean_upstream.requests()]
    assert [t["function"]["name"] for t in first["tools"]] == ["shell", "apply_patch"]
    assert second["messages"] == [
        {"role": "system", "content": "Fix files."},
        {"role": "user", "content": PROMPT},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_0", "type": "function", "function": {
                "name": "shell", "arguments": json.dumps(SHELL_ARGUMENTS)}},
            {"id": "call_1", "type": "function", "function": {
                "name": "apply_patch", "arguments": json.dumps(PATCH_ARGUMENTS)}}]},
        {"role": "tool", "tool_call_id": "call_0", "content": "Hello\nexit code: 0"},
        {"role": "tool", "tool_call_id": "call_1", "content": "completed: Updated greeting.txt"}]
