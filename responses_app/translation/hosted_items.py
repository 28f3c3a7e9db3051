"""The hosted tool items the gateway runs (`web_search_call`, `file_search_call`): the
functions the model is offered for them, their items and stream events, the text the model
is given as a call's result, and the items as history for the upstream. Pure.

A call streams as: `output_item.added` (status in_progress) → `response.<kind>.in_progress`
(when the model's call opens) → `response.<kind>.searching` (its arguments complete, the
search starts) → `response.<kind>.completed` → `output_item.done` (status completed, or
failed when the search failed: then no `.completed` event, as OpenAI's schema has no
`.failed` event for these calls). What the done item shows of the results depends on
`include`: `web_search_call.action.sources` adds `action.sources`,
`file_search_call.results` adds `results`; the model is given the results either way.

Results are numbered across the response ([1], [2], ... in the order the model is given
them) and the model is asked to cite them so; translation.citations turns the numbers
(and result URLs quoted in the text) into annotations.
"""
from dataclasses import dataclass

import orjson

WEB_SEARCH = "web_search"
FILE_SEARCH = "file_search"
ITEM_TYPES = {WEB_SEARCH: "web_search_call", FILE_SEARCH: "file_search_call"}
ID_PREFIXES = {WEB_SEARCH: "ws", FILE_SEARCH: "fs"}
SOURCES_INCLUDE = "web_search_call.action.sources"
RESULTS_INCLUDE = "file_search_call.results"
CITE_HINT = "Cite a result you use by its number in square brackets, like [1]."
NOT_KEPT = "(the results of this search were not kept)"

FUNCTIONS = {
    WEB_SEARCH: {
        "type": "function", "name": WEB_SEARCH, "strict": False,
        "description": "Search the web. Returns numbered results (title, URL, text); cite "
                       "the ones you use by number in square brackets, like [1].",
        "parameters": {"type": "object", "properties": {
            "query": {"type": "string", "description": "What to search for."}},
            "required": ["query"]}},
    FILE_SEARCH: {
        "type": "function", "name": FILE_SEARCH, "strict": False,
        "description": "Search the user's files. Returns numbered passages; cite the ones "
                       "you use by number in square brackets, like [1].",
        "parameters": {"type": "object", "properties": {
            "queries": {"type": "array", "items": {"type": "string"},
                        "description": "One or more search queries."}},
            "required": ["queries"]}},
}


def function_for_tool_type(tool_type) -> str | None:
    """The function a hosted tool type stands for (`web_search_preview` -> `web_search`)."""
    if isinstance(tool_type, str) and tool_type.startswith("web_search"):
        return WEB_SEARCH
    return FILE_SEARCH if tool_type == FILE_SEARCH else None


@dataclass(frozen=True)
class WebResult:
    title: str
    url: str
    text: str


@dataclass(frozen=True)
class FileResult:
    file_id: str
    filename: str
    score: float
    attributes: dict
    text: str


def new_item(kind: str, ids) -> dict:
    """A hosted call item, in progress (what `output_item.added` shows)."""
    item = {"id": ids(ID_PREFIXES[kind]), "type": ITEM_TYPES[kind], "status": "in_progress"}
    if kind == WEB_SEARCH:
        item["action"] = {"type": "search", "query": ""}
    else:
        item["queries"] = []
        item["results"] = None
    return item


def added_snapshot(item: dict) -> dict:
    copy = dict(item)
    if "action" in copy:
        copy["action"] = dict(copy["action"])
    if "queries" in copy:
        copy["queries"] = list(copy["queries"])
    return copy


def progress_event(item: dict, output_index: int, stage: str) -> dict:
    """`response.web_search_call.<stage>` / `response.file_search_call.<stage>`."""
    return {"type": f"response.{item['type']}.{stage}", "item_id": item["id"],
            "output_index": output_index}


def queries_of(kind: str, arguments: str) -> list[str]:
    """The queries in the model's arguments (`query`, or `queries` for file search; a
    bare string is taken as the query). Empty when there are none."""
    try:
        value = orjson.loads(arguments or "{}")
    except orjson.JSONDecodeError:
        value = arguments
    if isinstance(value, str):
        values = [value]
    elif isinstance(value, dict):
        values = value.get("queries")
        if not isinstance(values, list):
            values = [value.get("query")]
    else:
        values = []
    return [q.strip() for q in values if isinstance(q, str) and q.strip()]


def searching(item: dict, kind: str, queries: list[str]) -> None:
    """Record the queries on the item as its search starts."""
    item["status"] = "searching"
    if kind == WEB_SEARCH:
        item["action"]["query"] = queries[0] if queries else ""
    else:
        item["queries"] = list(queries)


def finish(item: dict, kind: str, results: list | None, include: frozenset, failed: bool):
    """Close the item with its results (as `include` asks)."""
    item["status"] = "failed" if failed else "completed"
    if kind == WEB_SEARCH:
        if SOURCES_INCLUDE in include and results is not None:
            item["action"]["sources"] = [{"type": "url", "url": r.url} for r in results]
    elif RESULTS_INCLUDE in include and results is not None:
        item["results"] = [{"file_id": r.file_id, "filename": r.filename, "score": r.score,
                            "attributes": r.attributes, "text": r.text} for r in results]


def done_events(item: dict, output_index: int) -> list[dict]:
    events = []
    if item["status"] == "completed":
        events.append(progress_event(item, output_index, "completed"))
    events.append({"type": "response.output_item.done", "output_index": output_index,
                   "item": item})
    return events


def result_text(kind: str, queries: list[str], results: list | None, first_number: int,
                error: str | None) -> str:
    """What the model is told of a search: its numbered results, or what went wrong."""
    quoted = ", ".join(f'"{q}"' for q in queries)
    if error is not None:
        return f"The search for {quoted} failed: {error}"
    if not results:
        return f"No results for {quoted}."
    lines = [f"Results for {quoted}:"]
    for number, result in enumerate(results, first_number):
        if kind == WEB_SEARCH:
            head = (f"[{number}] {result.url}" if result.title == result.url
                    else f"[{number}] {result.title} ({result.url})")
        else:
            head = f"[{number}] {result.filename}"
        lines.append(f"{head}\n{result.text}" if result.text else head)
    lines.append(CITE_HINT)
    return "\n\n".join(lines)


# --- history: a hosted call the model made, as the function call and its result ---------

def hosted_items_as_function_items(items: list[dict]) -> list[dict]:
    """The items with `web_search_call` / `file_search_call` items replaced by the function
    call the model made and the result it was given (rebuilt from what the item kept:
    the sources' URLs, the files' results, when they were included)."""
    if not any(item.get("type") in ("web_search_call", "file_search_call") for item in items):
        return items
    result = []
    for item in items:
        kind = {"web_search_call": WEB_SEARCH, "file_search_call": FILE_SEARCH}.get(
            item.get("type"))
        if kind is None:
            result.append(item)
            continue
        call_id = item.get("id") or "hosted_call"
        queries = _replayed_queries(kind, item)
        arguments = ({"query": queries[0] if queries else ""} if kind == WEB_SEARCH
                     else {"queries": queries})
        result.append({"type": "function_call", "id": call_id, "call_id": call_id,
                       "name": kind, "arguments": orjson.dumps(arguments).decode(),
                       "status": "completed"})
        result.append({"type": "function_call_output", "call_id": call_id,
                       "output": _replayed_output(kind, item, queries), "status": "completed"})
    return result


def _replayed_queries(kind: str, item: dict) -> list[str]:
    if kind == WEB_SEARCH:
        query = (item.get("action") or {}).get("query")
        return [query] if query else []
    return [q for q in item.get("queries") or () if isinstance(q, str)]


def _replayed_output(kind: str, item: dict, queries: list[str]) -> str:
    if item.get("status") == "failed":
        return result_text(kind, queries, None, 1, "the search did not complete")
    if kind == WEB_SEARCH:
        sources = (item.get("action") or {}).get("sources")
        results = None if sources is None else [
            WebResult(title=s.get("url", ""), url=s.get("url", ""), text="") for s in sources]
    else:
        kept = item.get("results")
        results = None if kept is None else [
            FileResult(file_id=r.get("file_id") or "", filename=r.get("filename") or "",
                       score=r.get("score") or 0.0, attributes=r.get("attributes") or {},
                       text=r.get("text") or "") for r in kept]
    if results is None:
        return f"Searched for {', '.join(repr(q) for q in queries)} {NOT_KEPT}."
    return result_text(kind, queries, results, 1, None)
