"""Codex CLI (`@openai/codex`, pinned in tests/clients) against the production deployment and
the fake upstream: `codex exec` with a custom model provider (`wire_api = "responses"`), in an
isolated HOME, its prompt scripting the fake model (`fake-tool-caller`) to call a tool.

- A shell call: Codex runs the command and sends its output back in the next request.
- `apply_patch`: Codex 0.171 offers apply_patch only as a freeform (custom) tool; the model
  catalog here gives the model none, so, as Codex's instructions then say, the model sends
  the patch through the shell tool and Codex applies it itself (a `file_change`).
  Codex's freeform apply_patch tool, through custom tools: test_e2e_codex_apply_patch.

Over Codex's WebSocket transport (`supports_websockets` in the provider) as well as HTTP.

No network but loopback: every proxy variable points at a closed loopback port (only
127.0.0.1 and localhost bypass it), and the config turns off what phones home (update
check, analytics, plugins, apps)."""
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

CODEX = Path("node_modules") / "@openai" / "codex" / "bin" / "codex.js"
CLOSED_PROXY = "http://127.0.0.1:9"  # the discard port: nothing listens there
CONFIG = """model = "fake-tool-caller"
model_provider = "gateway"
model_catalog_json = "{catalog}"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[analytics]
enabled = false

[features]
plugins = false
apps = false
remote_plugin = false

[model_providers.gateway]
name = "Responses gateway"
base_url = "{base_url}"
wire_api = "responses"
env_key = "GATEWAY_API_KEY"
request_max_retries = 0
stream_max_retries = 0
"""
TOOLS_OFFERED = [
    "exec_command", "write_stdin", "request_user_input", "view_image",
    "multi_agent_v1__close_agent", "multi_agent_v1__resume_agent", "multi_agent_v1__send_input",
    "multi_agent_v1__spawn_agent", "multi_agent_v1__wait_agent",
    "get_goal", "create_goal", "update_goal",
    "web_search"]  # Codex's web_search tool: the shared deployment has a search backend


def codex_env(home: Path, api_key: str) -> dict:
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home),
            "CODEX_HOME": str(home / ".codex"), "GATEWAY_API_KEY": api_key, "NO_COLOR": "1",
            **{name: CLOSED_PROXY for name in (
                "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
                "all_proxy")},
            "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}


@pytest.fixture(scope="session")
def codex_model(node_clients, tmp_path_factory) -> dict:
    """A catalog entry for `fake-tool-caller`, from the pinned Codex's bundled catalog: a
    model on the plain Responses API with no apply_patch tool."""
    home = tmp_path_factory.mktemp("codex-catalog")
    done = subprocess.run([shutil.which("node"), str(node_clients / CODEX), "debug", "models",
                           "--bundled"], capture_output=True, text=True, timeout=60,
                          env=codex_env(home, "none"), stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    plain = next(model for model in json.loads(done.stdout)["models"]
                 if not model.get("use_responses_lite") and "tool_mode" not in model)
    return {**plain, "slug": "fake-tool-caller", "display_name": "fake-tool-caller",
            "base_instructions": "You are a coding agent under test.", "model_messages": None,
            "apply_patch_tool_type": None, "supports_search_tool": False,
            "experimental_supported_tools": [], "include_skills_usage_instructions": False,
            "include_plugin_usage_instructions": False,
            "include_apps_usage_instructions": False}


def codex_exec(node_clients, codex_model, home: Path, base_url: str, api_key: str,
               prompt: str, websocket: bool = False) -> list[dict]:
    """`codex exec --json PROMPT` in `home`/work; return the finished items it reported.
    `websocket`: the provider says `supports_websockets`, and Codex must have used it."""
    (home / ".codex").mkdir(parents=True)
    catalog = home / ".codex" / "models.json"
    catalog.write_text(json.dumps({"models": [codex_model]}))
    (home / ".codex" / "config.toml").write_text(
        CONFIG.format(catalog=catalog, base_url=base_url)
        + ("supports_websockets = true\n" if websocket else ""))
    env = codex_env(home, api_key)
    if websocket:  # Codex logs its transport at info
        env["RUST_LOG"] = "codex_api::endpoint::responses_websocket=info"
    done = subprocess.run(
        [shutil.which("node"), str(node_clients / CODEX), "exec", "--skip-git-repo-check",
         "--json", prompt], cwd=home / "work", capture_output=True, text=True, timeout=60,
        env=env, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"codex exec failed:\n{done.stdout}{done.stderr}"
    if websocket:
        assert "successfully connected to Responses WebSocket status=101" in done.stderr
        assert "falling back to HTTP" not in done.stderr, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert [event["type"] for event in events if event["type"].startswith("turn.")] == [
        "turn.started", "turn.completed"], done.stdout
    return [event["item"] for event in events if event["type"] == "item.completed"]


def normalized(output: str) -> str:
    """Codex's tool output with its per-run parts (chunk id, wall time) blanked."""
    output = re.sub(r"Chunk ID: [0-9a-f]+", "Chunk ID: <id>", output)
    return re.sub(r"Wall time: [0-9.]+ seconds", "Wall time: <t> seconds", output)


def assert_round_trip(upstream, prompt: str, arguments: str, tool_output: str) -> None:
    """Two upstream requests: the prompt (the call), then the call and its output."""
    requests = upstream.requests()
    assert len(requests) == 2
    first, second = (request["body"] for request in requests)
    assert [tool["function"]["name"] for tool in second["tools"]] == TOOLS_OFFERED
    assert [message["role"] for message in first["messages"]] == [
        "system", "system", "user", "user"]
    assert first["messages"][0] == {"role": "system",
                                    "content": "You are a coding agent under test."}
    assert first["messages"][-1] == {"role": "user", "content": prompt}
    call, output = second["messages"][4:]
    assert second["messages"][:4] == first["messages"]
    assert call == {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_0", "type": "function",
         "function": {"name": "exec_command", "arguments": arguments}}]}
    assert (output["role"], output["tool_call_id"]) == ("tool", "call_0")
    assert normalized(output["content"]) == tool_output


class Codex:
    """`codex exec` in a fresh HOME whose prompt makes the fake model call the shell tool."""

    def __init__(self, node_clients, codex_model, home, production, api_key, upstream):
        self.run = lambda prompt, websocket=False: codex_exec(
            node_clients, codex_model, home, production.base_url, api_key, prompt, websocket)
        self.work, self.upstream = home / "work", upstream

    def call_shell(self, command: str, tool_output: str, websocket: bool = False) -> dict:
        """Check the round trip and Codex's answer (the fake model quotes the tool output);
        return the item Codex reported for the call."""
        arguments = json.dumps({"cmd": command})
        prompt = f"call exec_command {arguments}"
        done, answer = self.run(prompt, websocket)
        assert_round_trip(self.upstream, prompt, arguments, tool_output)
        assert (answer["type"], normalized(answer["text"])) == (
            "agent_message", f"Results: {tool_output}")
        return done


@pytest.fixture
def codex(node_clients, codex_model, tmp_path, production, tenant_key, clean_upstream):
    (tmp_path / "work").mkdir()
    return Codex(node_clients, codex_model, tmp_path, production, tenant_key, clean_upstream)


def test_codex_exec_runs_the_shell_command_the_model_called(codex):
    command = codex.call_shell("echo gateway > out.txt && cat out.txt", (
        "Chunk ID: <id>\nWall time: <t> seconds\nProcess exited with code 0\n"
        "Original token count: 2\nOutput:\ngateway\n"))
    assert (codex.work / "out.txt").read_text() == "gateway\n"
    assert {key: command[key] for key in ("type", "aggregated_output", "exit_code", "status")} \
        == {"type": "command_execution", "aggregated_output": "gateway\n", "exit_code": 0,
            "status": "completed"}
    assert command["command"].endswith("'echo gateway > out.txt && cat out.txt'")


def test_codex_exec_runs_a_shell_command_over_the_websocket_transport(codex):
    """A provider with `supports_websockets`: Codex opens `ws://…/v1/responses` (no fallback
    to HTTP) and sends its two requests as `response.create` frames; the upstream sees the
    same round trip as over HTTP."""
    command = codex.call_shell("echo socket", (
        "Chunk ID: <id>\nWall time: <t> seconds\nProcess exited with code 0\n"
        "Original token count: 2\nOutput:\nsocket\n"), websocket=True)
    assert (command["type"], command["aggregated_output"]) == ("command_execution", "socket\n")


def test_codex_offers_its_own_shell_tool_even_for_a_local_shell_type(
        node_clients, codex_model, tmp_path, production, tenant_key, clean_upstream):
    """Codex 0.171's catalog takes `shell_type: "local"` (OpenAI's `local_shell` tool type)
    but still offers `exec_command`: it sends no native shell tool type (the round trip
    checks the tools offered, TOOLS_OFFERED)."""
    (tmp_path / "work").mkdir()
    codex = Codex(node_clients, {**codex_model, "shell_type": "local"}, tmp_path, production,
                  tenant_key, clean_upstream)
    codex.call_shell("echo local", (
        "Chunk ID: <id>\nWall time: <t> seconds\nProcess exited with code 0\n"
        "Original token count: 2\nOutput:\nlocal\n"))


PATCH = """apply_patch <<'EOF'
*** Begin Patch
*** Update File: greeting.txt
@@
-Hello
+Hello, patched
*** End Patch
EOF
"""


def test_codex_exec_applies_the_patch_the_model_sent(codex):
    (codex.work / "greeting.txt").write_text("Hello\n")
    change = codex.call_shell(PATCH, (
        "Wall time: <t> seconds\nOutput:\nExit code: 0\nWall time: <t> seconds\n"
        "Output:\nSuccess. Updated the following files:\nM greeting.txt\n"))
    assert (codex.work / "greeting.txt").read_text() == "Hello, patched\n"
    assert (change["type"], change["status"], change["changes"]) == (
        "file_change", "completed", [{"path": str(codex.work / "greeting.txt"), "kind": "update"}])
