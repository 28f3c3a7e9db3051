"""The MCP part of a run: list each server's tools (or reuse the listing from the
conversation), offer the allowed ones to the model, run the calls it makes and the calls
the client approved, and decide whether another upstream turn follows. The request's
hosted tools (hosted_tools.loop: web and file search), when it has any, are offered and
run in the same loop.

Events are made by the pure translator and sent with the run's `emit`; this module does
the I/O (mcp_tools.client) and the bookkeeping, nothing else.
"""
import logging

import orjson
from django.conf import settings

# runs up a floor: the runner is a part of the run (worker side) kept with the MCP app; it
# renders the upstream's items and cleans a tool's output as the rest of the run does
from responses_app.context.compaction_items import carried_in, upstream_items
from responses_app.context.rendering import route_of
from responses_app.create.nul import without_nul
from responses_app.translation.chat_request import build_chat_request
from responses_app.translation.client_tools import OUTPUT_TYPES
from responses_app.translation.mcp_history import upstream_function_name
from responses_app.translation.state_machine import McpToolTarget
from responses_app.translation.tool_search_items import loaded_mcp_tools

from . import client
from .client import McpFailure
from .policy import needs_approval, tool_allowed
from .run_plan import McpRunPlan

log = logging.getLogger(__name__)

# Items after which the client must act: the run ends when a turn produced one (a
# tool_search_call the gateway ran, `execution: "server"`, is not one).
CLIENT_ITEMS = {"function_call", "custom_tool_call", "mcp_approval_request", *OUTPUT_TYPES}


def _for_client(item: dict) -> bool:
    return item["type"] in CLIENT_ITEMS and item.get("execution") != "server"


class McpToolLoop:
    def __init__(self, plan: McpRunPlan, job, translator, emit, hosted=None):
        self.plan = plan
        self.hosted = hosted  # hosted_tools.loop.HostedTools, or None
        self.job = job
        self.translator = translator
        self.emit = emit
        self.functions: list[dict] = []  # the chat function tools the MCP tools become
        self.targets: dict = {}  # upstream function name -> McpToolTarget, offered or not
        self.deferred: dict = {}  # upstream function name of a deferred tool -> (label, name)
        self.listings: dict[str, list[dict]] = {}  # each server's tools, as listed or reused
        self.calls_made = 0
        self._turn_start = 0

    async def prepare(self) -> dict:
        """List (or reuse) tools, run newly approved calls; the first turn's chat body."""
        targets = {}
        for label, server in self.plan.servers.items():
            for tool in await self._tools_of(label, server):
                if not tool_allowed(tool, server.allowed_tools):
                    continue
                name = upstream_function_name(label, tool["name"])
                if name in targets:
                    continue
                targets[name] = McpToolTarget(label, tool["name"],
                                              needs_approval(tool, server.require_approval))
                if server.deferred:  # offered once a tool search loads it
                    self.deferred[name] = (label, tool["name"])
                self.functions.append({
                    "type": "function", "name": name, "strict": False,
                    "description": tool.get("description"),
                    "parameters": tool.get("input_schema") or {"type": "object",
                                                               "properties": {}}})
        self.targets = targets
        self.translator.options.mcp_tools = targets
        if self.hosted:
            self.translator.options.hosted_tools = self.hosted.targets
            self.translator.options.hosted_include = frozenset(self.job.include)
        for request in self._approved_requests() if self.plan.servers else ():
            events, item = self.translator.open_mcp_call(
                request["server_label"], request["name"], request["arguments"], request["id"])
            await self.emit(events)
            await self._run_call(item, targets)
        return self.chat_body()

    async def after_turn(self, calls: list[dict]) -> dict | None:
        """Run the turn's MCP calls; the next turn's chat body, or None when the run ends."""
        new_items = self.translator.response["output"][self._turn_start:]
        for item in calls:
            if item["type"] == "mcp_call":
                await self._run_call(item, self.translator.options.mcp_tools)
            elif item["type"] == "tool_search_call":
                await self.hosted.tool_search.run(item, self._deferred_listings())
            else:
                await self.hosted.run(item)
        if not calls or any(_for_client(item) for item in new_items):
            return None
        return self.chat_body()

    def chat_body(self) -> dict:
        output = self.translator.response["output"]
        self._turn_start = len(output)
        params = dict(self.job.request["params"])
        params["tools"] = list(params.get("tools") or ()) + self._offered_functions(output)
        if self.calls_made >= self.plan.max_calls and self.plan.servers:
            params["tool_choice"] = "none"
        if self.hosted:
            params["tools"] += self.hosted.offered()
            params["tool_choice"] = self.hosted.next_tool_choice(params.get("tool_choice"))
            params["tools"] = self.hosted.tool_search.offered(params["tools"])
            params["tool_choice"] = self.hosted.tool_search.next_tool_choice(
                params["tool_choice"])
        items = upstream_items(self.job.items + output)
        if self.hosted:
            items = self.hosted.as_function_items(items)
        route = route_of(self.job.model)
        chat = build_chat_request(
            model=self.job.model, instructions=self.job.request.get("instructions"),
            items=items, params=params, include=self.job.include,
            max_tokens_param=settings.UPSTREAM_MAX_TOKENS_PARAM,
            merge_user_messages=settings.UPSTREAM_MERGE_USER_MESSAGES,
            images=route.accepts_images, passthrough=route.passthrough_params)
        # a namespaced or custom tool a search loaded this run is known from this turn on
        self.translator.options.function_names = chat.function_names
        self.translator.options.custom_tools = chat.custom_tools
        return chat.body

    def _offered_functions(self, output: list[dict]) -> list[dict]:
        """The MCP tools offered this turn: a deferred server's only once a tool search
        loaded them (translation.tool_search_items); the calls the translator takes for
        MCP calls are those offered."""
        loaded = (loaded_mcp_tools(upstream_items(self.job.items + output)) if self.deferred
                  else set())
        offered = [f for f in self.functions
                   if f["name"] not in self.deferred or self.deferred[f["name"]] in loaded]
        names = {f["name"] for f in offered}
        self.translator.options.mcp_tools = {name: target for name, target
                                             in self.targets.items() if name in names}
        return offered

    def _deferred_listings(self) -> dict[str, list[dict]]:
        """The allowed tools of each deferred MCP server, by label (what a search looks in)."""
        return {label: [t for t in self.listings.get(label) or ()
                        if tool_allowed(t, server.allowed_tools)]
                for label, server in self.plan.servers.items() if server.deferred}

    async def _tools_of(self, label, server) -> list[dict]:
        reused = self._listed_before(label)
        if reused is not None:
            self.listings[label] = reused
            return reused
        events, item = self.translator.open_list_tools(label)
        await self.emit(events)
        if server.target is None:
            error, tools = f"no MCP server is registered as '{label}'", None
        else:
            try:
                tools, error = await client.list_tools(server.target, self.plan.limits), None
            except McpFailure as failure:
                log.warning("tools/list of MCP server %s failed: %s", label, failure.text)
                tools, error = None, failure.text
        if tools is not None:
            self.listings[label] = tools
            tools = [t for t in tools if tool_allowed(t, server.allowed_tools)]
        await self.emit(self.translator.list_tools_done(item, tools, error))
        return tools or []

    def _listed_before(self, label) -> list[dict] | None:
        """The last successful listing of this server in the conversation, if any."""
        for item in reversed(self.job.items):
            if (item.get("type") == "mcp_list_tools" and item.get("server_label") == label
                    and not item.get("error")):
                return item.get("tools") or []
        return None

    def _approved_requests(self) -> list[dict]:
        """Approval requests this response's input approves, not yet run."""
        items = self.job.items
        requests = {i["id"]: i for i in [*items, *carried_in(items)]  # a compaction's too
                    if i.get("type") == "mcp_approval_request"}
        called = {i.get("approval_request_id") for i in items if i.get("type") == "mcp_call"}
        approved = []
        for item in items[len(items) - self.job.input_count:]:
            if (item.get("type") == "mcp_approval_response" and item.get("approve")
                    and item["approval_request_id"] in requests
                    and item["approval_request_id"] not in called):
                approved.append(requests[item["approval_request_id"]])
        return approved

    async def _run_call(self, item: dict, targets: dict) -> None:
        output, error = None, None
        server = self.plan.servers.get(item["server_label"])
        allowed = any(t.server_label == item["server_label"] and t.name == item["name"]
                      for t in targets.values())
        if server is None or server.target is None or not allowed:
            error = client.protocol_error(
                f"tool '{item['name']}' of '{item['server_label']}' is not available")
        elif self.calls_made >= self.plan.max_calls:
            error = client.protocol_error(
                f"the response reached its limit of {self.plan.max_calls} MCP calls")
        else:
            self.calls_made += 1
            try:
                arguments = orjson.loads(item["arguments"] or "{}")
                if not isinstance(arguments, dict):
                    raise ValueError
            except ValueError:
                error = client.protocol_error("the arguments are not a JSON object", -32602)
            else:
                try:
                    output = await client.call_tool(server.target, self.plan.limits,
                                                    item["name"], arguments,
                                                    self.listings.get(item["server_label"]))
                except McpFailure as failure:
                    log.info("MCP call %s on %s failed: %s", item["name"], item["server_label"],
                             failure.text)
                    error = failure.error
        # a tool may return NUL, which Postgres cannot store: replaced, as the model's are
        await self.emit(self.translator.mcp_call_done(item, without_nul(output),
                                                      without_nul(error)))
