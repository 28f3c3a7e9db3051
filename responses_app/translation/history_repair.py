"""History repair: a client's item list arranged into one every Chat Completions backend
takes, before it becomes the upstream's messages (pure).

Strict backends (chat templates that check roles, OpenAI itself) refuse a tool message that
does not follow its call, a call left without its tool message, and (some templates) two
user messages in a row. Clients send all of these: an agent that stopped mid-call, parallel
calls whose outputs come back interleaved with other items, a reasoning item of another
provider with nothing in it. Each repair is named in the result (the run logs and counts
them), and none drops a user's text:

- `empty_reasoning`: a reasoning item with no content and no summary is dropped (no
  reasoning item is sent upstream; these are counted because clients send them by mistake);
- `regrouped_outputs`: the outputs of one turn's calls are moved right after its calls, in
  call order (items that came between them follow the outputs);
- `missing_output`: a call without an output gets the output `aborted` (what Codex puts in
  its own history for a call that never finished);
- `missing_call`: an output whose call is nowhere gets a call to a function named
  `function` with no arguments (the request side refuses such an output in a client's
  input with OpenAI's 400; this repair is for stored histories);
- `duplicate_output`: a second output for one call is dropped;
- `merged_user_messages`: consecutive user messages become one, their texts joined by a
  blank line (their parts concatenated when they hold images), when the deployment asks
  for it (UPSTREAM_MERGE_USER_MESSAGES): OpenAI, Ollama and the chat templates of most
  current models take them as they are, some templates (Gemma, older Mistral) insist that
  user and assistant alternate.
"""
from dataclasses import dataclass, field

MISSING_OUTPUT = "aborted"
CALL = "function_call"
OUTPUT = "function_call_output"
_TRANSPARENT = ("reasoning",)  # items that may sit between the calls of one turn


@dataclass
class RepairedItems:
    """Items (or chat messages) after repair, and the repairs made, one name each."""

    items: list[dict]
    repairs: list[str] = field(default_factory=list)


def repair_items(items: list[dict]) -> RepairedItems:
    """The items with calls and outputs paired and grouped (custom tool and MCP items
    already mapped to function calls and outputs)."""
    repairs: list[str] = []
    items, calls, outputs = _kept_calls_outputs(items, repairs)
    if not calls and not outputs:  # nothing to pair (a chat without tools)
        return RepairedItems(items, repairs)
    result: list[dict] = []
    placed: set[int] = set()
    position = 0
    while position < len(items):
        item = items[position]
        kind = item.get("type")
        if kind == CALL:
            position = _place_turn(items, position, outputs, result, placed, repairs)
            continue
        if kind == OUTPUT and id(item) not in placed:
            if item["call_id"] in calls and outputs[item["call_id"]] is not item:
                repairs.append("duplicate_output")
            elif item["call_id"] not in calls:
                repairs.append("missing_call")
                result += [_synthesized_call(item["call_id"]), item]
            # an output of a call placed later is placed with that call
        elif kind != OUTPUT:
            result.append(item)
        position += 1
    return RepairedItems(result, repairs)


def _place_turn(items, start, outputs, result, placed, repairs) -> int:
    """Place the run of calls from `start` with their outputs; the position after the run."""
    end, turn = start, []
    while end < len(items) and items[end].get("type") in (CALL, *_TRANSPARENT):
        if items[end].get("type") == CALL:
            turn.append(items[end])
        end += 1
    answers, moved, real = [], False, 0
    for call in turn:
        answer = outputs.get(call["call_id"])
        if answer is None or id(answer) in placed:
            repairs.append("missing_output")
            answer = {"type": OUTPUT, "call_id": call["call_id"], "output": MISSING_OUTPUT,
                      "status": "completed"}
        else:
            at, real = end + real, real + 1
            moved = moved or at >= len(items) or items[at] is not answer
        placed.add(id(answer))
        answers.append(answer)
    if moved:
        repairs.append("regrouped_outputs")
    result += turn + answers
    return end


def _kept_calls_outputs(items, repairs) -> tuple[list[dict], set, dict]:
    """The items but empty reasoning items (one pass), the call ids of their calls, and
    the first output of each call id."""
    kept: list[dict] = []
    calls: set[str] = set()
    outputs: dict[str, dict] = {}
    for item in items:
        kind = item.get("type")
        if kind == CALL:
            calls.add(item["call_id"])
        elif kind == OUTPUT:
            outputs.setdefault(item["call_id"], item)
        elif kind == "reasoning" and not (
                item.get("content") or item.get("summary") or item.get("encrypted_content")):
            repairs.append("empty_reasoning")
            continue
        kept.append(item)
    return kept, calls, outputs


def _synthesized_call(call_id: str) -> dict:
    return {"type": CALL, "call_id": call_id, "name": "function", "arguments": "{}",
            "status": "completed"}


def merge_consecutive_users(messages: list[dict]) -> RepairedItems:
    """Chat messages with each run of consecutive user messages merged into one."""
    merged: list[dict] = []
    repairs: list[str] = []
    for message in messages:
        last = merged[-1] if merged else None
        if message["role"] == "user" and last is not None and last["role"] == "user":
            merged[-1] = {"role": "user",
                          "content": _joined(last["content"], message["content"])}
            repairs.append("merged_user_messages")
        else:
            merged.append(message)
    return RepairedItems(merged, repairs)


def _joined(first, second):
    if isinstance(first, str) and isinstance(second, str):
        return f"{first}\n\n{second}"
    return _parts(first) + _parts(second)


def _parts(content) -> list[dict]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
