"""The translator's steps for the tools the gateway runs itself between upstream turns.

`ResponseTranslator` inherits these: an MCP call it makes on its own (`open_mcp_call`) and
the result of any running MCP call (`mcp_call_done`), a hosted call's search and results
(`hosted_searching`, `hosted_call_done`: the results numbered for the model to cite), a
server-run tool search's output (`tool_search_done`) and an MCP server's tool list
(`open_list_tools`, `list_tools_done`). They use the machine's state: `_running` (calls
whose results are awaited), `_add_item` / `_add_item_index`, `options`, `response` and
`citation_sources`. Pure, like the machine.
"""
from . import hosted_items, mcp_events, tool_search_items
from .tool_items import ToolCall

HOSTED_ITEM_TYPES = {item_type: kind for kind, item_type in hosted_items.ITEM_TYPES.items()}


class GatewayToolSteps:
    """The steps of gateway-run calls, mixed into the state machine."""

    def open_mcp_call(self, server_label: str, name: str, arguments: str,
                      approval_request_id: str | None) -> tuple[list[dict], dict]:
        """An MCP call the gateway makes on its own (an approved request): its item, opened."""
        item = mcp_events.new_call_item(self.options.ids("mcp"), server_label, name,
                                        approval_request_id)
        events: list[dict] = []
        call = ToolCall(item=item, output_index=self._add_item(events, item, dict(item)),
                        pieces=[arguments])
        events.append(mcp_events.call_in_progress(item, call.output_index))
        if arguments:
            events.append(mcp_events.arguments_delta(item, call.output_index, arguments))
        item["arguments"] = arguments
        events.append(mcp_events.arguments_done(item, call.output_index))
        self._running[item["id"]] = call
        return events, item

    def mcp_call_done(self, item: dict, output: str | None = None,
                      error: dict | None = None) -> list[dict]:
        """The result of a running MCP call: `.completed` with output or `.failed` with error."""
        call = self._running.pop(item["id"])
        return mcp_events.call_done(item, call.output_index, output, error)

    def hosted_searching(self, item: dict) -> tuple[list[dict], str, list[str]]:
        """A hosted call's search starts: its `.searching` event, its kind and queries."""
        call = self._running[item["id"]]
        kind = HOSTED_ITEM_TYPES[item["type"]]
        queries = hosted_items.queries_of(kind, "".join(call.pieces))
        hosted_items.searching(item, kind, queries)
        return [hosted_items.progress_event(item, call.output_index, "searching")], kind, queries

    def hosted_call_done(self, item: dict, results: list | None,
                         error: str | None = None) -> tuple[list[dict], str]:
        """A hosted call's results (or why it failed): its closing events, and the text the
        model is given, its results numbered after those it was given before."""
        call = self._running.pop(item["id"])
        kind = HOSTED_ITEM_TYPES[item["type"]]
        first = len(self.citation_sources) + 1
        for number, result in enumerate(results or (), first):
            self.citation_sources[number] = result
        hosted_items.finish(item, kind, results, self.options.hosted_include,
                            failed=error is not None)
        queries = ([item["action"]["query"]] if kind == hosted_items.WEB_SEARCH
                   else item["queries"])
        text = hosted_items.result_text(kind, queries, results, first, error)
        return hosted_items.done_events(item, call.output_index), text

    def tool_search_done(self, tools: list[dict]) -> list[dict]:
        """The gateway's tool search found `tools`: its `tool_search_output` item's events."""
        item = tool_search_items.output_item(self.options.ids, tools)
        return tool_search_items.output_events(item, self._add_item_index(item))

    def open_list_tools(self, server_label: str) -> tuple[list[dict], dict]:
        """An `mcp_list_tools` item, in progress."""
        item = {"id": self.options.ids("mcpl"), "type": "mcp_list_tools",
                "server_label": server_label, "tools": []}
        events: list[dict] = []
        output_index = self._add_item(events, item, {**item, "tools": []})
        events.append(mcp_events.list_tools_in_progress(item, output_index))
        return events, item

    def list_tools_done(self, item: dict, tools: list[dict] | None,
                        error: str | None = None) -> list[dict]:
        output_index = self.response["output"].index(item)
        return mcp_events.list_tools_done(item, output_index, tools, error)
