"""The tool search the gateway runs for one response (`{"type": "tool_search"}`, execution
`server`): the deferred tools it searches, the search itself when the model calls the
`tool_search` function (in the worker's tool loop, mcp_tools.runner, beside the MCP and
hosted calls), and whether that function is still offered.

Deferred are the function tools marked `defer_loading: true` (also inside a namespace) and
every tool of an MCP server marked so (its listing, as `allowed_tools` filters it). None
reaches the model until a search finds it: a search ranks the deferred tools not loaded yet
(tool_ranking: BM25 over names, descriptions and parameters) and keeps the best
TOOL_SEARCH_MAX_RESULTS; its `tool_search_output` item (translation.tool_search_items)
loads them, and the next upstream turn offers them (functions through the chat request's
tools, translation.client_tools; MCP tools through mcp_tools.runner, run by the gateway).
A response makes at most HOSTED_MAX_TOOL_CALLS searches (or `max_tool_calls`, the
smaller); after that the function is no longer offered.
"""
import logging
from dataclasses import dataclass

from django.conf import settings

from observability.metrics import HOSTED_TOOL_CALLS
from responses_app.context.compaction_items import upstream_items
from responses_app.translation.tool_search_items import loaded_functions, loaded_mcp_tools

from .tool_ranking import rank, words

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Candidate:
    kind: str            # "function", "namespace" (a function in one) or "mcp"
    group: dict | None   # the request's namespace or mcp tool
    tool: dict           # the function, or the MCP server's listed tool


class ToolSearch:
    def __init__(self, job, translator, emit):
        self.job, self.translator, self.emit = job, translator, emit
        tools = job.request["params"].get("tools") or ()
        self.tool = next((t for t in tools if t["type"] == "tool_search"
                          and t.get("execution") == "server"), None)
        self.calls_made = 0

    def __bool__(self) -> bool:
        return self.tool is not None

    async def run(self, item: dict, mcp_listings: dict[str, list[dict]]) -> None:
        """Search for one `tool_search_call` (done already) and add its output item;
        `mcp_listings`: the allowed tools of each deferred MCP server, by label."""
        query = item["arguments"].get("query") if isinstance(item["arguments"], dict) else None
        found, searched = [], isinstance(query, str) and self.calls_made < self._limit()
        if searched:
            self.calls_made += 1
            candidates = self._candidates(mcp_listings)
            best = rank(query, [_words(c) for c in candidates],
                        settings.TOOL_SEARCH_MAX_RESULTS)
            found = _as_tools([candidates[i] for i in best])
        HOSTED_TOOL_CALLS.labels(tool="tool_search",
                                 status="completed" if searched else "failed").inc()
        log.info("tool search of %s for %r found %d tools", self.job.id, query,
                 sum(len(t.get("tools") or t.get("allowed_tools") or [t]) for t in found))
        await self.emit(self.translator.tool_search_done(found))

    def offered(self, tools: list[dict]) -> list[dict]:
        """The request's tools for the next turn: without the tool search once the
        searches are used up."""
        if self.tool is None or self.calls_made < self._limit():
            return tools
        return [t for t in tools if t is not self.tool]

    def next_tool_choice(self, choice):
        """A choice forcing the search is satisfied once one ran (`auto` after it)."""
        if self.calls_made and isinstance(choice, dict) and choice.get("type") == "tool_search":
            return "auto"
        return choice

    def _candidates(self, mcp_listings: dict[str, list[dict]]) -> list[Candidate]:
        """The deferred tools not loaded yet, in the request's order."""
        # as the upstream receives it: a compaction's carried searches count
        history = upstream_items(self.job.items + self.translator.response["output"])
        functions, mcp = loaded_functions(history), loaded_mcp_tools(history)
        candidates = []
        for tool in self.job.request["params"].get("tools") or ():
            if tool["type"] == "function" and tool.get("defer_loading") \
                    and (None, tool["name"]) not in functions:
                candidates.append(Candidate("function", None, tool))
            elif tool["type"] == "namespace":
                candidates += [Candidate("namespace", tool, inner) for inner in tool["tools"]
                               if inner.get("defer_loading")
                               and (tool["name"], inner["name"]) not in functions]
            elif tool["type"] == "mcp" and tool.get("defer_loading"):
                candidates += [Candidate("mcp", tool, listed)
                               for listed in mcp_listings.get(tool["server_label"]) or ()
                               if (tool["server_label"], listed["name"]) not in mcp]
        return candidates

    def _limit(self) -> int:
        return min(filter(None, (settings.HOSTED_MAX_TOOL_CALLS,
                                 self.job.request["params"].get("max_tool_calls"))), default=0)


def _words(candidate: Candidate) -> list[str]:
    """What a tool is matched by: its name, description, group and parameters."""
    tool, group = candidate.tool, candidate.group or {}
    schema = tool.get("input_schema") if candidate.kind == "mcp" else tool.get("parameters")
    properties = (schema or {}).get("properties") if isinstance(schema, dict) else None
    text = [tool.get("name"), tool.get("description"),
            group.get("server_label") or group.get("name")]
    for name, spec in (properties or {}).items() if isinstance(properties, dict) else ():
        text += [name, spec.get("description") if isinstance(spec, dict) else None]
    return words(" ".join(t for t in text if isinstance(t, str)))


def _as_tools(found: list[Candidate]) -> list[dict]:
    """The found tools as the request gave them, best first: a namespace or an MCP server
    once, where its first found tool ranked, holding every found tool of it."""
    tools, groups = [], {}
    for candidate in found:
        if candidate.kind == "function":
            tools.append(candidate.tool)
            continue
        key = (candidate.kind, id(candidate.group))
        if key not in groups:
            if candidate.kind == "namespace":
                groups[key] = {**candidate.group, "tools": []}
            else:
                groups[key] = {**candidate.group, "allowed_tools": []}
            tools.append(groups[key])
        if candidate.kind == "namespace":
            groups[key]["tools"].append(candidate.tool)
        else:
            groups[key]["allowed_tools"].append(candidate.tool["name"])
    return tools
