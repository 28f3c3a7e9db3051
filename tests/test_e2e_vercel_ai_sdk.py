"""The Vercel AI SDK (`ai` + `@ai-sdk/openai` `.responses()`), pinned in tests/clients, under
Node against the production deployment and the fake upstream: a 3-turn `generateText` chat
with its default `store: true`, which sends earlier assistant items as `item_reference`s
without `previous_response_id`.

The packages are installed once per lockfile into var/node-clients/ (`npm ci`). Node.js
and npm are required: without them the test fails (CI installs them)."""
import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.servers import ROOT

CLIENTS = ROOT / "tests" / "clients"
CACHE = ROOT / "var" / "node-clients"
PINNED = ("package.json", "package-lock.json")


@pytest.fixture(scope="session")
def node_clients() -> Path:
    """A directory holding tests/clients' scripts and their pinned node_modules."""
    npm, node = shutil.which("npm"), shutil.which("node")
    assert npm and node, "Node.js and npm are required (apt-get install nodejs npm)"
    digest = hashlib.sha256(b"".join((CLIENTS / name).read_bytes() for name in PINNED))
    target = CACHE / digest.hexdigest()[:16]
    if not (target / "node_modules").is_dir():
        building = CACHE / f"{target.name}.{os.getpid()}"
        shutil.rmtree(building, ignore_errors=True)
        building.mkdir(parents=True)
        for name in PINNED:
            shutil.copy(CLIENTS / name, building / name)
        done = subprocess.run([npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund"],
                              cwd=building, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"npm ci failed:\n{done.stdout}{done.stderr}"
        try:
            building.rename(target)
        except OSError:  # another session installed it meanwhile
            shutil.rmtree(building, ignore_errors=True)
    for script in CLIENTS.glob("*.mjs"):
        shutil.copy(script, target / script.name)
    return target


def run_node(node_clients: Path, script: str, base_url: str, api_key: str) -> dict:
    done = subprocess.run(
        [shutil.which("node"), script], cwd=node_clients, capture_output=True, text=True,
        timeout=120, env={**os.environ, "GATEWAY_BASE_URL": base_url,
                          "GATEWAY_API_KEY": api_key})
    assert done.returncode == 0, f"{script} failed:\n{done.stdout}{done.stderr}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_three_turn_vercel_ai_sdk_chat_with_its_default_store(
        node_clients, production, tenant_key, clean_upstream):
    result = run_node(node_clients, "vercel_chat.mjs", production.base_url, tenant_key)
    assert result["texts"] == ["Results: 18C in Paris", "No tools.", "No tools."]
    sent = result["sent"]
    assert [body.get("previous_response_id") for body in sent] == [None] * 4
    answers = [item["id"] for item in sent[3]["input"] if item.get("type") == "item_reference"]
    first_user, call, call_output, thanks, reference_to_answer, tomorrow = (
        user_text('call get_weather {"city":"Paris"}'),
        {"type": "function_call", "call_id": "call_0", "name": "get_weather",
         "arguments": '{"city":"Paris"}'},
        {"type": "function_call_output", "call_id": "call_0", "output": "18C in Paris"},
        user_text("Thanks!"), {"type": "item_reference", "id": answers[0]},
        user_text("And tomorrow?"))
    assert [body["input"] for body in sent] == [
        [first_user],
        [first_user, call, call_output],
        [first_user, call, call_output, reference_to_answer, thanks],
        [first_user, call, call_output, reference_to_answer, thanks,
         {"type": "item_reference", "id": answers[1]}, tomorrow],
    ]
    assert answers == [result["received"][1]["output"][0]["id"],
                       result["received"][2]["output"][0]["id"]]
    assert clean_upstream.requests()[-1]["body"]["messages"] == [
        {"role": "user", "content": 'call get_weather {"city":"Paris"}'},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_0", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}]},
        {"role": "tool", "tool_call_id": "call_0", "content": "18C in Paris"},
        {"role": "assistant", "content": "Results: 18C in Paris"},
        {"role": "user", "content": "Thanks!"},
        {"role": "assistant", "content": "No tools."},
        {"role": "user", "content": "And tomorrow?"},
    ]


def user_text(text):
    return {"role": "user", "content": [{"type": "input_text", "text": text}]}

