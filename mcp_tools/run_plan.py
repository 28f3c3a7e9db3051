"""What a run needs to use MCP tools, read in the worker's sync part (database, header
store): the servers of the request with their URLs and credentials, and the limits."""
from dataclasses import dataclass, field

from django.conf import settings

from . import header_store
from .client import Limits, ServerTarget
from .egress import parse_allowlist
from .models import McpServer


@dataclass
class ServerPlan:
    target: ServerTarget | None  # None: the registered server is gone
    allowed_tools: object
    require_approval: object
    deferred: bool = False  # `defer_loading`: its tools wait for a tool search


@dataclass
class McpRunPlan:
    servers: dict = field(default_factory=dict)  # server_label -> ServerPlan
    limits: Limits | None = None
    max_calls: int = 0


def mcp_limits() -> Limits:
    """The deployment's limits on MCP calls (Responses and Chat Completions alike)."""
    return Limits(call_timeout=settings.MCP_CALL_TIMEOUT_SECONDS,
                  connect_timeout=settings.MCP_CONNECT_TIMEOUT_SECONDS,
                  max_tools=settings.MCP_MAX_TOOLS_PER_SERVER,
                  max_result_bytes=settings.MCP_MAX_RESULT_BYTES,
                  allowlist=parse_allowlist(settings.MCP_EGRESS_ALLOWLIST))


def registered_targets(tenant_id: int) -> list[ServerTarget]:
    """Every MCP server registered for the tenant, as call targets (database)."""
    return [ServerTarget(label=server.label, url=server.url, transport=server.transport,
                         headers=server.headers(), guarded=False)
            for server in McpServer.objects.filter(tenant_id=tenant_id).order_by("label")]


def mcp_run_plan(job) -> McpRunPlan | None:
    """None when the request has no MCP tools."""
    tools = [t for t in job.request["params"].get("tools") or () if t["type"] == "mcp"]
    if not tools:
        return None
    headers = header_store.take(job.response_id)
    registered = {server.label: server for server in McpServer.objects.filter(
        tenant_id=job.tenant_id, label__in=[t["server_label"] for t in tools])}
    plan = McpRunPlan(limits=mcp_limits())
    plan.max_calls = min(filter(None, (settings.MCP_MAX_TOOL_CALLS,
                                       job.request["params"].get("max_tool_calls"))))
    for tool in tools:
        label = tool["server_label"]
        target = None
        if tool["server_url"] is not None:
            url = tool["server_url"]
            transport = "sse" if url.rstrip("/").endswith("/sse") else "streamable_http"
            target = ServerTarget(label=label, url=url, transport=transport,
                                  headers=headers.get(label) or {}, guarded=True)
        elif label in registered:
            server = registered[label]
            target = ServerTarget(label=label, url=server.url, transport=server.transport,
                                  headers=server.headers(), guarded=False)
        plan.servers[label] = ServerPlan(target=target, allowed_tools=tool["allowed_tools"],
                                         require_approval=tool["require_approval"],
                                         deferred=bool(tool.get("defer_loading")))
    return plan
