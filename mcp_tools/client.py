"""Talking to one MCP server: list its tools, call one. Each operation opens its own
connection inside the run (on the worker's event loop) and closes it when done, failed,
timed out or cancelled (cancelling the awaiting task unwinds the connection).

Failures come back as the Responses API's structured `mcp_call.error`
(`mcp_protocol_error`, `mcp_tool_execution_error`, `http_error`) in an McpFailure.
Request headers go on the wire and nowhere else: they are never logged. With tracing on,
each operation is a client span (GenAI `execute_tool` for a call), a child of the run's.

A call is given the server's listing the run already has (listed in this response, or the
`mcp_list_tools` item of the conversation it continues): the `mcp` client checks a call's
result against the tool's output schema and lists the server's tools first when it has no
listing of its own, which would list them again on every call. Given ours it does not (our
stored listings keep no output schemas, so no result is checked against one: the gateway
hands the model the result's text either way).
"""
import asyncio
from contextlib import asynccontextmanager, nullcontext
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpx2
import orjson
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import ListToolsResult, Tool
from pydantic import ValidationError

from observability import tracing

from .egress import EgressRefused, PinnedTransport, resolve_checked, system_resolver

INTERNAL_ERROR = -32603
TIMEOUT_ERROR = -32001


@dataclass(frozen=True)
class ServerTarget:
    """Where one MCP server is and how to reach it."""

    label: str
    url: str
    transport: str = "streamable_http"  # or "sse" (legacy)
    headers: dict = field(default_factory=dict, repr=False)
    guarded: bool = True  # a request-supplied URL: goes through the egress guard


@dataclass(frozen=True)
class Limits:
    call_timeout: float
    connect_timeout: float
    max_tools: int
    max_result_bytes: int
    allowlist: list = field(default_factory=list)
    resolver: object = system_resolver


class McpFailure(Exception):
    """An operation failed; `error` is the structured mcp_call error."""

    def __init__(self, error: dict):
        super().__init__(error.get("message") or "tool error")
        self.error = error

    @property
    def text(self) -> str:
        return f"{self.error['type']}: {self.error.get('message') or self.error.get('content')}"


async def list_tools(target: ServerTarget, limits: Limits) -> list[dict]:
    """The server's tools as `mcp_list_tools` entries."""
    with _traced(target, "tools/list"):
        return await _list_tools(target, limits)


async def _list_tools(target: ServerTarget, limits: Limits) -> list[dict]:
    tools = []
    async with _operation(target, limits, "tools/list") as client:
        cursor = None
        while True:
            page = await client.list_tools(cursor=cursor)
            tools += [_tool_entry(tool) for tool in page.tools]
            if len(tools) > limits.max_tools:
                raise McpFailure(protocol_error(
                    f"the server lists more than {limits.max_tools} tools"))
            cursor = page.next_cursor
            if not cursor:
                return tools


async def call_tool(target: ServerTarget, limits: Limits, name: str, arguments: dict,
                    listed: list[dict] | None = None) -> str:
    """The tool's output text; McpFailure with the structured error otherwise. `listed`:
    the server's tools as the run listed them (`mcp_list_tools` entries)."""
    with _traced(target, "tools/call", name):
        async with _operation(target, limits, "tools/call") as client:
            if listed is not None:
                _remember_listing(client, listed)
            result = await client.call_tool(name, arguments)
    texts = [_content_text(part) for part in result.content]
    if result.is_error:
        raise McpFailure({"type": "mcp_tool_execution_error",
                          "content": [{"type": "text", "text": text} for text in texts]})
    output = "\n".join(texts)
    if not texts and result.structured_content is not None:
        output = orjson.dumps(result.structured_content).decode()
    if len(output.encode()) > limits.max_result_bytes:
        raise McpFailure(protocol_error(
            f"the tool result is larger than {limits.max_result_bytes} bytes"))
    return output


def _traced(target: ServerTarget, method: str, tool: str | None = None):
    """The span of one MCP operation (a nullcontext when tracing is off)."""
    if not tracing.active():
        return nullcontext()
    url = urlsplit(target.url)
    attributes = {"mcp.method.name": method, "gateway.mcp.server_label": target.label,
                  "server.address": url.hostname or "",
                  "server.port": url.port or (443 if url.scheme == "https" else 80)}
    if tool is not None:
        attributes.update({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool})
    return tracing.client_span(f"{method} {tool}" if tool else method, attributes)


def _remember_listing(client: Client, listed: list[dict]) -> None:
    """Give the client's session a listing of the server's tools, as the `mcp` client's own
    response cache does on a cache hit (the session keeps per-tool state from it)."""
    tools = [Tool(name=entry["name"], description=entry.get("description"),
                  input_schema=entry.get("input_schema") or {"type": "object"})
             for entry in listed]
    client.session._absorb_tool_listing(ListToolsResult(tools=tools), complete=False)


def protocol_error(message: str, code: int = INTERNAL_ERROR) -> dict:
    return {"type": "mcp_protocol_error", "code": code, "message": message}


def http_error(message: str, code: int) -> dict:
    return {"type": "http_error", "code": code, "message": message}


@asynccontextmanager
async def _operation(target: ServerTarget, limits: Limits, method: str):
    """A connected client, the whole operation bounded by the call timeout."""
    try:
        async with asyncio.timeout(limits.call_timeout):
            async with _connect(target, limits) as client:
                yield client
    except McpFailure:
        raise
    except TimeoutError:
        raise McpFailure(protocol_error(f"{method} timeout after {limits.call_timeout:g}s",
                                        TIMEOUT_ERROR)) from None
    except EgressRefused as refused:
        raise McpFailure(http_error(f"refused by the egress guard: {refused}", 403)) from None
    except BaseException as exc:
        if not isinstance(exc, Exception):
            raise  # cancellation and exits pass through, after the connection closed
        raise McpFailure(_error_of(_leaf(exc), method, limits)) from None


@asynccontextmanager
async def _connect(target: ServerTarget, limits: Limits):
    if target.guarded:
        pinned = await resolve_checked(target.url, limits.allowlist, limits.resolver)
        transport = PinnedTransport(pinned)
    else:
        transport = httpx2.AsyncHTTPTransport(trust_env=False)
    timeout = httpx2.Timeout(limits.connect_timeout, read=limits.call_timeout)

    def http_client(headers=None, timeout=timeout, auth=None):
        return httpx2.AsyncClient(transport=transport, headers=headers, timeout=timeout,
                                  auth=auth, trust_env=False)

    if target.transport == "sse":
        connection = Client(sse_client(target.url, headers=target.headers,
                                       httpx_client_factory=http_client), mode="legacy")
        async with connection as client:
            yield client
        return
    async with http_client(headers=target.headers) as http:
        async with Client(streamable_http_client(target.url, http_client=http)) as client:
            yield client


def _leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _error_of(exc: BaseException, method: str, limits: Limits) -> dict:
    if isinstance(exc, MCPError):
        if "timed out" in exc.error.message:
            return protocol_error(f"{method} timeout after {limits.call_timeout:g}s",
                                  TIMEOUT_ERROR)
        return protocol_error(exc.error.message, exc.error.code)
    if isinstance(exc, TimeoutError):
        return protocol_error(f"{method} timeout after {limits.call_timeout:g}s", TIMEOUT_ERROR)
    if isinstance(exc, httpx2.HTTPStatusError):
        return http_error(f"the MCP server answered HTTP {exc.response.status_code}",
                          exc.response.status_code)
    if isinstance(exc, httpx2.TransportError | OSError):
        return http_error(f"the MCP server could not be reached ({type(exc).__name__}: {exc})",
                          502)
    if isinstance(exc, ValidationError | ValueError):
        return protocol_error(f"the MCP server sent an invalid response ({type(exc).__name__})")
    return protocol_error(f"{method} failed ({type(exc).__name__}: {exc})")


def _tool_entry(tool) -> dict:
    annotations = tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else None
    return {"name": tool.name, "input_schema": tool.input_schema,
            "description": tool.description, "annotations": annotations or None}


def _content_text(part) -> str:
    text = getattr(part, "text", None)
    if isinstance(text, str):
        return text
    return orjson.dumps(part.model_dump(mode="json", exclude_none=True)).decode()
