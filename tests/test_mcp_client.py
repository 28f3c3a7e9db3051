"""The MCP client against a real MCP server: a call in flight stops when its task is
cancelled (what /cancel does to a run), its connection closed and nothing left running."""
import asyncio

import pytest

from mcp_tools.client import Limits, ServerTarget, call_tool
from mcp_tools.egress import parse_allowlist
from tests.mcp_server import McpTestServer


@pytest.fixture(scope="module")
def server():
    server = McpTestServer("cancel").start()
    yield server
    server.stop()


def test_cancelling_the_task_stops_a_call_in_flight(server):
    limits = Limits(call_timeout=30, connect_timeout=5, max_tools=10, max_result_bytes=1000,
                    allowlist=parse_allowlist(["127.0.0.1/32"]))

    async def scenario():
        task = asyncio.create_task(call_tool(ServerTarget("s", server.url), limits, "sleep",
                                             {"seconds": 20}))
        async with asyncio.timeout(10):
            while server.stats["sleeping"] == 0:
                await asyncio.sleep(0.01)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await asyncio.sleep(0)
        return [t for t in asyncio.all_tasks()
                if not t.done() and t is not asyncio.current_task()]

    left_over = asyncio.run(scenario())
    assert left_over == []
    assert server.stats["slept"] == 0


def test_a_pinned_connection_goes_to_the_checked_address_with_the_original_host(server):
    async def resolver(host, port):
        assert host == "mcp.test"
        return ["127.0.0.1"]

    limits = Limits(call_timeout=10, connect_timeout=5, max_tools=10, max_result_bytes=1000,
                    allowlist=parse_allowlist(["127.0.0.1/32"]), resolver=resolver)
    url = f"http://mcp.test:{server.port}/mcp"
    assert asyncio.run(call_tool(ServerTarget("s", url), limits, "echo", {"text": "p"})) == "echo: p"
    assert server.stats["hosts"][-1] == f"mcp.test:{server.port}"
