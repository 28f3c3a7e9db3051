"""A real MCP server for tests: the `mcp` package's MCPServer under uvicorn on 127.0.0.1.

Serves Streamable HTTP at `/mcp` and the legacy SSE transport at `/sse` from one app, with
the tools `echo`, `sum`, `sleep`, `raise` and `large` (or, with `catalog=True`, the 100
tools of CATALOG: a verb of CATALOG_VERBS and a thing of CATALOG_THINGS each, e.g.
`get_weather_forecast`, for the tool search). Counts the tool calls it started and
finished and records the Authorization and Host headers it got, so tests can see that
credentials arrived, a cancelled call stopped and a pinned connection kept its host name.
Host names it accepts (DNS rebinding protection): 127.0.0.1, localhost and `mcp.test`.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import ToolAnnotations
from starlette.applications import Starlette
from starlette.routing import Mount


def build_server(name: str, stats: dict) -> MCPServer:
    server = MCPServer(name)

    @server.tool(description="Echo the text back.", annotations=ToolAnnotations(readOnlyHint=True))
    def echo(text: str) -> str:
        stats["calls"] += 1
        return f"echo: {text}"

    @server.tool(description="Add two integers.", annotations=ToolAnnotations(readOnlyHint=True))
    def sum(a: int, b: int) -> str:
        stats["calls"] += 1
        return str(a + b)

    @server.tool(description="Sleep for some seconds, then say so.")
    async def sleep(seconds: float) -> str:
        stats["calls"] += 1
        stats["sleeping"] += 1
        try:
            await asyncio.sleep(seconds)
        finally:
            stats["sleeping"] -= 1
        stats["slept"] += 1
        return f"slept {seconds}"

    @server.tool(name="raise", description="Always fails.")
    def raise_(message: str) -> str:
        stats["calls"] += 1
        raise ValueError(message)

    @server.tool(description="Return `size` characters.")
    def large(size: int) -> str:
        stats["calls"] += 1
        return "x" * size

    return server


CATALOG_VERBS = ("get", "list", "create", "delete")
CATALOG_THINGS = ("invoice", "customer", "order", "shipment", "weather_forecast", "calendar_event",
                  "ticket", "refund", "product", "warehouse", "employee", "payroll", "contract",
                  "supplier", "campaign", "coupon", "review", "subscription", "report", "budget",
                  "meeting_room", "vehicle", "patient", "recipe", "playlist")
CATALOG = [f"{verb}_{thing}" for thing in CATALOG_THINGS for verb in CATALOG_VERBS]


def build_catalog_server(name: str, stats: dict) -> MCPServer:
    """100 tools, `<verb>_<thing>(id: str)`, each answering `<tool name>: <id>`."""
    server = MCPServer(name)
    for tool_name in CATALOG:
        verb, thing = tool_name.split("_", 1)
        server.add_tool(_catalog_handler(tool_name, stats), name=tool_name,
                        description=f"{verb.capitalize()} the {thing.replace('_', ' ')} of an id.")
    return server


def _catalog_handler(tool_name: str, stats: dict):
    def handler(id: str) -> str:
        stats["calls"] += 1
        return f"{tool_name}: {id}"
    return handler


def _recording_methods(receive, methods: list):
    """`receive` that appends the JSON-RPC method of each request body to `methods`."""
    body = []

    async def recording():
        message = await receive()
        if message["type"] == "http.request":
            body.append(message.get("body", b""))
            if not message.get("more_body"):
                try:
                    payload = json.loads(b"".join(body) or b"null")
                except ValueError:
                    payload = None
                for request in payload if isinstance(payload, list) else [payload]:
                    if isinstance(request, dict) and "method" in request:
                        methods.append(request["method"])
        return message
    return recording


class McpTestServer:
    """Streamable HTTP (`url`) and legacy SSE (`sse_url`) servers in a background thread."""

    def __init__(self, name: str = "demo", catalog: bool = False):
        self.stats = {"calls": 0, "sleeping": 0, "slept": 0, "authorization": [], "hosts": [],
                      "methods": []}
        self.name = name
        self.build = build_catalog_server if catalog else build_server
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def sse_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/sse"

    def start(self, timeout: float = 10.0) -> McpTestServer:
        http_mcp = self.build(self.name, self.stats)
        sse_mcp = self.build(self.name, self.stats)
        security = TransportSecuritySettings(
            allowed_hosts=["127.0.0.1:*", "localhost:*", "mcp.test:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*"])
        http_app = http_mcp.streamable_http_app(stateless_http=True, json_response=True,
                                                transport_security=security)
        sse_app = sse_mcp.sse_app(transport_security=security)

        @contextlib.asynccontextmanager
        async def lifespan(app):
            async with http_app.router.lifespan_context(app):
                yield

        inner = Starlette(routes=[Mount("/", routes=[*http_app.routes, *sse_app.routes])],
                          lifespan=lifespan)
        stats = self.stats

        async def app(scope, receive, send):  # records the Authorization header it gets
            if scope["type"] == "http":
                headers = dict(scope["headers"])
                stats["hosts"].append(headers.get(b"host", b"").decode())
                if b"authorization" in headers:
                    stats["authorization"].append(headers[b"authorization"].decode())
                receive = _recording_methods(receive, stats["methods"])
            await inner(scope, receive, send)
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(app, loop="asyncio", lifespan="auto", access_log=False,
                                log_level="warning")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]},
                                        daemon=True, name=f"mcp-{self.name}")
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the MCP test server did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
            self._server.force_exit = True  # do not wait for a sleeping tool
            self._thread.join(timeout=10)
