"""The `compaction` item: a summary of an earlier conversation, sealed by this deployment.

Its `encrypted_content` is the summary under authenticated encryption (reasoning_token's
mechanism, its own key): only this deployment reads it, and a token that is altered or
sealed elsewhere is refused as input (400), never opened or trusted.

It also seals the items a summary cannot stand for (carried_items): those that decide
which tools are offered (CARRIED: a tool search's call and output, `additional_tools`),
since what is loaded is derived from the items of the history, so a compaction that
dropped them would unload every deferred tool a search had found; and the calls still
waiting for their output (of every kind) and the MCP approval requests still waiting for
an answer, whose answer comes after the compaction and must find them. Sealed in the item,
they survive whatever the client keeps (OpenAI lets it drop everything before the latest
compaction item) and a chain read from its latest compaction on.

What the upstream receives (`upstream_items`): the latest compaction item replaces
everything before it but the user messages right before it (those a compaction keeps, in
the order it returned them). Its summary goes first, as a developer message
(COMPACTION_PREFIX and the summary); then the items it carries; then those user messages;
then every item after it.

An unfinished compaction (a run's, cut before its summary was written: cancelled, steered,
failed) is closed with a token of its own (`unfinished_compaction`): one this deployment
sealed, so the item is sent back as input as any other, but it stands for nothing. It
replaces nothing, carries nothing, and the upstream does not receive it: a conversation
holding one is sent as if that compaction never began (`compacts` tells the two apart).
"""
from ..errors import InvalidRequest
from ..ids import new_id
from ..reasoning_token import open_payload, seal_payload
from ..translation.client_tools import OUTPUT_TYPES

PURPOSE = "compaction"
COMPACTION_PREFIX = "Summary of the earlier conversation (it replaces the messages before it):\n"
# the items a compaction carries as they are: the tools offered are derived from them
UNFINISHED = {"unfinished": True}  # the payload of a compaction that wrote no summary
CARRIED = ("tool_search_call", "tool_search_output", "additional_tools")
# a call item type -> the type of the item that answers it (by call_id)
ANSWERS = {"function_call": "function_call_output", "custom_tool_call": "custom_tool_call_output",
           **OUTPUT_TYPES}


def compaction_item(summary: str, carried: list[dict] = ()) -> dict:
    """A new compaction item sealing `summary` and the `carried` items."""
    payload = {"summary": summary, "items": list(carried)} if carried else {"summary": summary}
    return {"id": new_id("cmp"), "type": "compaction",
            "encrypted_content": seal_payload(payload, PURPOSE)}


def unfinished_compaction() -> str:
    """The `encrypted_content` of a compaction cut before its summary was written."""
    return seal_payload(UNFINISHED, PURPOSE)


def compacts(item: dict) -> bool:
    """Whether `item` is a compaction that stands for the conversation before it (one with
    its summary, or one not readable here: sealed under an older SECRET_KEY), not an
    unfinished one."""
    return item.get("type") == "compaction" and not _unfinished(_payload(item))


def carried_items(items: list[dict]) -> list[dict]:
    """The items among `items` a compaction of them carries, in order: CARRIED, the calls
    no output among them answers, the MCP approval requests no answer or call follows."""
    answered = {(item.get("type"), item.get("call_id")) for item in items}
    decided = {item.get("approval_request_id") for item in items
               if item.get("type") in ("mcp_approval_response", "mcp_call")}
    return [item for item in items if item.get("type") in CARRIED
            or (item.get("type") in ANSWERS
                and (ANSWERS[item["type"]], item.get("call_id")) not in answered)
            or (item.get("type") == "mcp_approval_request" and item.get("id") not in decided)]


def carried_in(items: list[dict]) -> list[dict]:
    """The items the compaction items among `items` carry (for the request side's checks
    of what an input answers)."""
    return [carried for item in items if item.get("type") == "compaction"
            for carried in _sealed(item)[1]]


def summary_of(item: dict) -> str | None:
    """The summary sealed in a compaction item; None if it is not ours, was altered, or is
    unfinished (`is_unfinished`)."""
    payload = _payload(item)
    summary = payload.get("summary") if payload else None
    return summary if isinstance(summary, str) else None


def is_unfinished(item: dict) -> bool:
    """Whether `item` is a compaction this deployment closed before its summary was written."""
    return item.get("type") == "compaction" and _unfinished(_payload(item))


def _payload(item: dict) -> dict | None:
    return open_payload(item.get("encrypted_content"), PURPOSE)


def _unfinished(payload: dict | None) -> bool:
    return payload is not None and payload.get("unfinished") is True


def _sealed(item: dict) -> tuple[str | None, list[dict]]:
    """(the summary, the carried items) sealed in a compaction item; (None, []) if it is
    not ours, was altered, or is unfinished."""
    payload = _payload(item) or {}
    summary, carried = payload.get("summary"), payload.get("items")
    if not isinstance(summary, str):
        return None, []
    return summary, [i for i in carried if isinstance(i, dict)] if isinstance(carried, list) else []


def compaction_input_item(item: dict, param: str) -> dict:
    """A `compaction` input item, checked: its token must be one this deployment sealed
    (with a summary, or unfinished)."""
    token = item.get("encrypted_content")
    if not isinstance(token, str) or (summary_of(item) is None and not is_unfinished(item)):
        raise InvalidRequest(
            f"The encrypted content of '{param}' could not be verified: a compaction item "
            f"must be sent back exactly as this deployment returned it.",
            param=f"{param}.encrypted_content", code="invalid_encrypted_content")
    value = item.get("id")
    return {"id": value if isinstance(value, str) and value else new_id("cmp"),
            "type": "compaction", "encrypted_content": token}


def latest_compaction(items: list[dict]) -> tuple[int | None, bool]:
    """(the position of the latest compaction that `compacts`, None if there is none;
    whether an unfinished one comes after it)."""
    unfinished = False
    for position in range(len(items) - 1, -1, -1):
        if items[position].get("type") == "compaction":
            if not is_unfinished(items[position]):
                return position, unfinished
            unfinished = True
    return None, unfinished


def kept_start(items: list[dict], position: int) -> int:
    """Where the user messages right before the compaction at `position` begin (an
    unfinished compaction among them is passed over: it stands for nothing)."""
    start = position
    while start > 0 and (_is_user_message(items[start - 1]) or is_unfinished(items[start - 1])):
        start -= 1
    return start


def upstream_items(items: list[dict]) -> list[dict]:
    """The items the upstream receives: after the latest compaction, its summary in place
    of everything before it but the user messages it kept; unfinished compactions left out."""
    position, unfinished = latest_compaction(items)
    if position is None:
        return _without_compactions(items) if unfinished else items
    summary, carried = _sealed(items[position])
    if summary is None:  # sealed under an older SECRET_KEY: nothing can be read of it
        summary = "(unavailable)"
    message = {"id": items[position]["id"], "type": "message", "role": "developer",
               "content": [{"type": "input_text", "text": COMPACTION_PREFIX + summary}]}
    kept = _without_compactions(items[kept_start(items, position):position])
    after = items[position + 1:]
    return [message, *carried, *kept, *(_without_compactions(after) if unfinished else after)]


def _without_compactions(items: list[dict]) -> list[dict]:
    """`items` without their compaction items (where each left is unfinished)."""
    return [item for item in items if item.get("type") != "compaction"]


def _is_user_message(item: dict) -> bool:
    return item.get("type") == "message" and item.get("role") == "user"
