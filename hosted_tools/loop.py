"""The hosted tools of one run: the functions the model is offered for the request's
`web_search` / `file_search` tools, and each call the model makes run in the worker's tool
loop (mcp_tools.runner calls `run()` for the turn's hosted calls), its events made by the
pure translator and sent with the run's `emit`. The text the model was given for each call
is kept here, so the next turn's history carries it (`as_function_items`). The request's
server-run `tool_search` is here too (`tool_search`: hosted_tools.tool_search).
"""
import logging

import orjson
from django.conf import settings

from observability.metrics import HOSTED_TOOL_CALLS
from responses_app.translation.hosted_items import (
    FILE_SEARCH, FUNCTIONS, WEB_SEARCH, function_for_tool_type,
)

from .file_search import FileSearchFailed, search_files
from .tool_search import ToolSearch
from .web_search import SearchFailed, search_web

log = logging.getLogger(__name__)
HOSTED_ITEM_TYPES = ("web_search_call", "file_search_call")


class HostedTools:
    def __init__(self, job, translator, emit):
        self.job, self.translator, self.emit = job, translator, emit
        self.tools = {}  # function name -> the request's tool
        for tool in job.request["params"].get("tools") or ():
            kind = function_for_tool_type(tool["type"])
            if kind is not None:
                self.tools[kind] = tool
        self.functions = [FUNCTIONS[kind] for kind in self.tools]
        self.targets = {kind: kind for kind in self.tools}
        self.outputs: dict[str, str] = {}  # item id -> what the model was given
        self.calls_made = 0
        self.tool_search = ToolSearch(job, translator, emit)

    def __bool__(self) -> bool:
        return bool(self.tools) or bool(self.tool_search)

    async def run(self, item: dict) -> None:
        """Search for one hosted call and close it with the results (or the failure)."""
        events, kind, queries = self.translator.hosted_searching(item)
        await self.emit(events)
        results, error = None, None
        limit = self._limit()
        if not queries:
            error = "the call named no query"
        elif self.calls_made >= limit:
            error = f"the response reached its limit of {limit} searches"
        else:
            self.calls_made += 1
            results, error = await self._search(kind, queries)
        HOSTED_TOOL_CALLS.labels(tool=kind, status="failed" if error else "completed").inc()
        events, text = self.translator.hosted_call_done(item, results, error)
        self.outputs[item["id"]] = text
        await self.emit(events)

    async def _search(self, kind: str, queries: list[str]):
        try:
            if kind == WEB_SEARCH:
                return await search_web(self.tools[WEB_SEARCH], queries[0],
                                        self.job.tenant_id), None
            return await search_files(self.job.tenant_id, self.tools[FILE_SEARCH], queries), None
        except (SearchFailed, FileSearchFailed) as failure:
            log.info("%s %s failed: %s", kind, self.job.id, failure)
            return None, str(failure)
        except Exception:
            log.exception("%s of %s crashed", kind, self.job.id)
            return None, "the search had an error"

    def offered(self) -> list[dict]:
        """The functions offered for the next turn: none once the searches are used up."""
        return self.functions if self.calls_made < self._limit() else []

    def next_tool_choice(self, choice):
        """The next turn's tool_choice: a choice that forced a search is satisfied once one
        ran (`auto` after it)."""
        if self.outputs and (choice == "required" or (
                isinstance(choice, dict) and function_for_tool_type(choice.get("type")))):
            return "auto"
        return choice

    def _limit(self) -> int:
        return min(filter(None, (settings.HOSTED_MAX_TOOL_CALLS,
                                 self.job.request["params"].get("max_tool_calls"))), default=0)

    def as_function_items(self, items: list[dict]) -> list[dict]:
        """This run's hosted calls as the function calls the model made and the exact text
        it was given (earlier ones are replayed by translation.hosted_items)."""
        result = []
        for item in items:
            text = self.outputs.get(item.get("id")) if item.get("type") in HOSTED_ITEM_TYPES \
                else None
            if text is None:
                result.append(item)
                continue
            name = WEB_SEARCH if item["type"] == "web_search_call" else FILE_SEARCH
            result.append({"type": "function_call", "id": item["id"], "call_id": item["id"],
                           "name": name, "arguments": self._arguments(item),
                           "status": "completed"})
            result.append({"type": "function_call_output", "call_id": item["id"],
                           "output": text, "status": "completed"})
        return result

    @staticmethod
    def _arguments(item: dict) -> str:
        if item["type"] == "web_search_call":
            return orjson.dumps({"query": item["action"].get("query") or ""}).decode()
        return orjson.dumps({"queries": item.get("queries") or []}).decode()
