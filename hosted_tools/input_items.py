"""The hosted call items a client sends back as input (the Agents SDK resends a run's whole
history): `web_search_call` and `file_search_call`, normalized to the shapes the gateway
stores (no database here). Their results go upstream as what the item kept
(translation.hosted_items)."""
from responses_app.errors import InvalidRequest
from responses_app.ids import new_id

STATUSES = ("in_progress", "searching", "completed", "incomplete", "failed")


def _status(item, param) -> str:
    status = item.get("status") or "completed"
    if status not in STATUSES:
        raise InvalidRequest(f"Invalid '{param}.status'.", param=f"{param}.status",
                             code="invalid_value")
    return status


def _id(item, prefix) -> str:
    value = item.get("id")
    return value if isinstance(value, str) and value else new_id(prefix)


def _web_search_call(item, param) -> dict:
    action = item.get("action") or {"type": "search"}
    if not isinstance(action, dict) or not isinstance(action.get("type"), str):
        raise InvalidRequest(f"'{param}.action' must be an object with a 'type'.",
                             param=f"{param}.action", code="invalid_type")
    sources = action.get("sources")
    if sources is not None and not (isinstance(sources, list) and all(
            isinstance(s, dict) and isinstance(s.get("url"), str) for s in sources)):
        raise InvalidRequest(f"'{param}.action.sources' must be a list of {{'type': 'url', "
                             f"'url': ...}}.", param=f"{param}.action.sources",
                             code="invalid_type")
    return {"id": _id(item, "ws"), "type": "web_search_call",
            "status": _status(item, param), "action": action}


def _file_search_call(item, param) -> dict:
    queries = item.get("queries") or []
    results = item.get("results")
    if not (isinstance(queries, list) and all(isinstance(q, str) for q in queries)):
        raise InvalidRequest(f"'{param}.queries' must be a list of strings.",
                             param=f"{param}.queries", code="invalid_type")
    if results is not None and not (isinstance(results, list)
                                    and all(isinstance(r, dict) for r in results)):
        raise InvalidRequest(f"'{param}.results' must be a list of results.",
                             param=f"{param}.results", code="invalid_type")
    return {"id": _id(item, "fs"), "type": "file_search_call",
            "status": _status(item, param), "queries": queries, "results": results}


HOSTED_ITEM_BUILDERS = {
    "web_search_call": _web_search_call,
    "file_search_call": _file_search_call,
}
