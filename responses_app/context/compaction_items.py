"""The `compaction` item: a summary of an earlier conversation, sealed by this deployment.

Its `encrypted_content` is the summary under authenticated encryption (reasoning_token's
mechanism, its own key): only this deployment reads it, and a token that is altered or
sealed elsewhere is refused as input (400), never opened or trusted.

What the upstream receives (`upstream_items`): the latest compaction item replaces
everything before it but the user messages right before it (those a compaction keeps, in
the order it returned them). Its summary goes first, as a developer message
(COMPACTION_PREFIX and the summary); then those user messages; then every item after it.
"""
from ..errors import InvalidRequest
from ..ids import new_id
from ..reasoning_token import open_payload, seal_payload

PURPOSE = "compaction"
COMPACTION_PREFIX = "Summary of the earlier conversation (it replaces the messages before it):\n"


def compaction_item(summary: str) -> dict:
    """A new compaction item sealing `summary`."""
    return {"id": new_id("cmp"), "type": "compaction",
            "encrypted_content": seal_payload({"summary": summary}, PURPOSE)}


def summary_of(item: dict) -> str | None:
    """The summary sealed in a compaction item; None if it is not ours or was altered."""
    payload = open_payload(item.get("encrypted_content"), PURPOSE)
    summary = payload.get("summary") if payload else None
    return summary if isinstance(summary, str) else None


def compaction_input_item(item: dict, param: str) -> dict:
    """A `compaction` input item, checked: its token must be one this deployment sealed."""
    token = item.get("encrypted_content")
    if not isinstance(token, str) or summary_of(item) is None:
        raise InvalidRequest(
            f"The encrypted content of '{param}' could not be verified: a compaction item "
            f"must be sent back exactly as this deployment returned it.",
            param=f"{param}.encrypted_content", code="invalid_encrypted_content")
    value = item.get("id")
    return {"id": value if isinstance(value, str) and value else new_id("cmp"),
            "type": "compaction", "encrypted_content": token}


def latest_compaction(items: list[dict]) -> int | None:
    """The position of the latest compaction item, None if there is none."""
    for position in range(len(items) - 1, -1, -1):
        if items[position].get("type") == "compaction":
            return position
    return None


def kept_start(items: list[dict], position: int) -> int:
    """Where the user messages right before the compaction at `position` begin."""
    start = position
    while start > 0 and _is_user_message(items[start - 1]):
        start -= 1
    return start


def upstream_items(items: list[dict]) -> list[dict]:
    """The items the upstream receives: after the latest compaction, its summary in place
    of everything before it but the user messages it kept."""
    position = latest_compaction(items)
    if position is None:
        return items
    summary = summary_of(items[position])
    if summary is None:  # sealed under an older SECRET_KEY: nothing can be read of it
        summary = "(unavailable)"
    message = {"id": items[position]["id"], "type": "message", "role": "developer",
               "content": [{"type": "input_text", "text": COMPACTION_PREFIX + summary}]}
    start = kept_start(items, position)
    return [message, *items[start:position], *items[position + 1:]]


def _is_user_message(item: dict) -> bool:
    return item.get("type") == "message" and item.get("role") == "user"
