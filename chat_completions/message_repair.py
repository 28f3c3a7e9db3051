"""Tool messages repaired as /v1/responses repairs its history (pure): a chat message list
becomes items, responses_app.translation.history_repair pairs and groups them (its repairs:
`regrouped_outputs`, `missing_output`, `missing_call`, `duplicate_output`), and the items
become chat messages again.

An assistant message's tool calls become `function_call` items after it (tagged with the
message they came from, so they go back into it); a `tool` message becomes a
`function_call_output` item; every other message travels untouched. A call synthesized
for an orphaned output is an assistant message of its own (function `function`, no
arguments); an output synthesized for an unanswered call is a `tool` message `aborted`.
"""
from responses_app.translation.history_repair import CALL, OUTPUT, RepairedItems, repair_items

MESSAGE = "chat_message"


def repair_messages(messages: list[dict]) -> RepairedItems:
    """The messages with every `tool` message right after the call it answers."""
    if not any(m.get("role") == "tool" or m.get("tool_calls") for m in messages):
        return RepairedItems(messages)
    repaired = repair_items(_items(messages))
    if not repaired.repairs:
        return RepairedItems(messages)
    return RepairedItems(_messages(repaired.items), repaired.repairs)


def _items(messages: list[dict]) -> list[dict]:
    items = []
    for turn, message in enumerate(messages):
        if message.get("role") == "tool":
            items.append({"type": OUTPUT, "call_id": message["tool_call_id"], "message": message})
        elif message.get("tool_calls"):
            items.append({"type": MESSAGE, "message": message, "turn": turn})
            items += [{"type": CALL, "call_id": call["id"], "call": call, "turn": turn}
                      for call in message["tool_calls"]]
        else:
            items.append({"type": MESSAGE, "message": message})
    return items


def _messages(items: list[dict]) -> list[dict]:
    messages: list[dict] = []
    open_turn = None  # (turn, the rebuilt assistant message) calls are added to
    for item in items:
        kind = item["type"]
        if kind == MESSAGE:
            message = item["message"]
            if "turn" in item:
                message = {**message, "tool_calls": []}
                open_turn = (item["turn"], message)
            else:
                open_turn = None
            messages.append(message)
        elif kind == CALL:
            call = item.get("call") or {"id": item["call_id"], "type": "function", "function": {
                "name": item["name"], "arguments": item["arguments"]}}
            if open_turn is None or open_turn[0] != item.get("turn"):
                open_turn = (item.get("turn"), {"role": "assistant", "content": None,
                                                "tool_calls": []})
                messages.append(open_turn[1])
            open_turn[1]["tool_calls"].append(call)
        else:
            messages.append(item.get("message") or {
                "role": "tool", "tool_call_id": item["call_id"], "content": item["output"]})
            open_turn = None
    return messages
