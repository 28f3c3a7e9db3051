"""Clients we did not write that run under Node.js (the Vercel AI SDK, Codex CLI), pinned in
tests/clients (package.json and its lockfile), installed once per lockfile into
var/node-clients/ with `npm ci`. Codex's native binary ships inside its npm package (one
optional dependency per platform), so it installs like the others. Node.js and npm are
required: without them the tests fail (CI installs them)."""
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
    for stale in CACHE.iterdir():  # installs of earlier lockfiles (Codex alone is ~400 MB)
        if "." not in stale.name and stale.name != target.name:
            shutil.rmtree(stale, ignore_errors=True)
    for script in CLIENTS.glob("*.mjs"):
        shutil.copy(script, target / script.name)
    return target


def run_node(node_clients: Path, script: str, base_url: str, api_key: str) -> dict:
    """Run one of tests/clients' scripts; return the JSON object it printed last."""
    done = subprocess.run(
        [shutil.which("node"), script], cwd=node_clients, capture_output=True, text=True,
        timeout=120, env={**os.environ, "GATEWAY_BASE_URL": base_url,
                          "GATEWAY_API_KEY": api_key})
    assert done.returncode == 0, f"{script} failed:\n{done.stdout}{done.stderr}"
    return json.loads(done.stdout.strip().splitlines()[-1])
