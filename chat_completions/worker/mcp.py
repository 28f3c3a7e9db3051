"""The tenant's registered MCP servers as functions of a chat completion, and the calls to
them: listed and called through mcp_tools.client (the MCP client and egress guard of
/v1/responses), named as there (`<server_label>__<tool>`), the client's own functions
winning a name both have, a name two servers share going to the first by label.

A worker reuses a server's listing for CHAT_MCP_LISTING_SECONDS (a chat request lists no
tools on the way to its first token while it is fresh); a server whose listing fails is
left out of that request, and tried again by the next.
"""
import logging
import time
from dataclasses import dataclass

import orjson
from django.conf import settings

from mcp_tools import client
from mcp_tools.client import McpFailure, ServerTarget
from mcp_tools.run_plan import mcp_limits, registered_targets
from responses_app.create.nul import without_nul
from responses_app.translation.mcp_history import upstream_function_name

log = logging.getLogger(__name__)

_listings: dict = {}  # (tenant id, label, url) -> (expires at, tools)
_targets: dict = {}  # tenant id -> (expires at, [ServerTarget])


@dataclass
class McpFunction:
    target: ServerTarget
    tool: str  # the tool's name on its server
    listed: list  # the server's listing (the client checks arguments against it)


class ChatMcpTools:
    """The MCP functions one chat completion offers, and its calls to them."""

    def __init__(self, functions: dict[str, McpFunction]):
        self.functions = functions  # function name -> McpFunction

    def __bool__(self) -> bool:
        return bool(self.functions)

    def tools(self) -> list[dict]:
        """The chat `tools` entries of the MCP functions."""
        return [{"type": "function", "function": {
            "name": name, "description": _description(f), "parameters": _schema(f)}}
            for name, f in self.functions.items()]

    async def call(self, name: str, arguments: str) -> tuple[str, bool]:
        """(the text the model gets back, whether the call succeeded)."""
        function = self.functions[name]
        try:
            parsed = orjson.loads(arguments or "{}")
            if not isinstance(parsed, dict):
                raise ValueError
        except ValueError:
            return "Error: the arguments are not a JSON object.", False
        try:
            output = await client.call_tool(function.target, mcp_limits(), function.tool,
                                            parsed, function.listed)
        except McpFailure as failure:
            log.info("MCP call %s failed: %s", name, failure.text)
            return f"Error: {failure.text}", False
        return without_nul(output), True


async def tenant_mcp_tools(tenant_id: int, client_names: list[str], blocking) -> ChatMcpTools:
    """The MCP functions of the tenant's registered servers (none: an empty set)."""
    targets = await _tenant_targets(tenant_id, blocking)
    functions: dict[str, McpFunction] = {}
    taken = set(client_names)
    for target in targets:
        tools = await _listing(tenant_id, target)
        for tool in tools:
            name = upstream_function_name(target.label, tool["name"])
            if name in taken or name in functions:
                continue
            functions[name] = McpFunction(target, tool["name"], tools)
    return ChatMcpTools(functions)


async def _tenant_targets(tenant_id: int, blocking) -> list[ServerTarget]:
    """The tenant's servers, read at most once per CHAT_MCP_LISTING_SECONDS per worker."""
    cached = _targets.get(tenant_id)
    now = time.monotonic()
    if cached is not None and cached[0] > now:
        return cached[1]
    targets = await blocking(registered_targets, tenant_id)
    _targets[tenant_id] = (now + settings.CHAT_MCP_LISTING_SECONDS, targets)
    return targets


async def _listing(tenant_id: int, target: ServerTarget) -> list[dict]:
    key = (tenant_id, target.label, target.url)
    cached = _listings.get(key)
    now = time.monotonic()
    if cached is not None and cached[0] > now:
        return cached[1]
    try:
        tools = await client.list_tools(target, mcp_limits())
    except McpFailure as failure:
        log.warning("tools/list of MCP server %s failed: %s", target.label, failure.text)
        return []
    _listings[key] = (now + settings.CHAT_MCP_LISTING_SECONDS, tools)
    return tools


def _description(function: McpFunction) -> str:
    for tool in function.listed:
        if tool["name"] == function.tool:
            return tool.get("description") or ""
    return ""


def _schema(function: McpFunction) -> dict:
    for tool in function.listed:
        if tool["name"] == function.tool:
            return tool.get("input_schema") or {"type": "object", "properties": {}}
    return {"type": "object", "properties": {}}
