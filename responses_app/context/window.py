"""Fitting a run's chat request into its route's context window (before any upstream call).

The budget is the window minus `max_output_tokens`. Over it, `truncation: "disabled"` (the
default) is OpenAI's 400 `context_length_exceeded`; `"auto"` drops the oldest messages after
the leading system messages (the instructions, a compaction summary) until it fits: never
the newest user message nor anything after it, and an assistant message's tool calls always
with the tool messages that answer them. A route whose window is unknown is not checked.
Sync: it may ask the upstream to count (a run calls it on a thread).
"""
from dataclasses import dataclass

from upstreams.routing import Route
from upstreams.token_counting import count_chat_tokens, render_chat
from upstreams.token_counting import count_text as count_text_tokens

MAX_RECOUNTS = 8


class ContextTooLong(Exception):
    def __init__(self, tokens: int, window: int, budget: int):
        super().__init__(
            f"Your input exceeds the context window of this model: {tokens} input tokens, "
            f"and the window of {window} tokens leaves {budget} for the input. Please adjust "
            f"your input and try again, or use truncation: 'auto'.")


@dataclass
class Fitted:
    body: dict
    tokens: int
    dropped: int = 0  # messages dropped by truncation


def budget_of(window: int, params: dict) -> int:
    return window - (params.get("max_output_tokens") or 0)


def fit(route: Route, body: dict, tokens: int, window: int, params: dict) -> Fitted:
    """`body` as it fits the window (truncated under `auto`); ContextTooLong if it cannot."""
    budget = budget_of(window, params)
    if tokens <= budget:
        return Fitted(body, tokens)
    if params.get("truncation") != "auto":
        raise ContextTooLong(tokens, window, budget)
    messages, dropped = list(body["messages"]), 0
    for _ in range(MAX_RECOUNTS):
        head, units, tail = _units(messages)
        cut = _units_to_drop(route, units, tokens - budget)
        if not cut:  # nothing left that may be dropped
            break
        dropped += sum(len(unit) for unit in units[:cut])
        messages = head + [m for unit in units[cut:] for m in unit] + tail
        body = {**body, "messages": messages}
        tokens = count_chat_tokens(route, body).tokens
        if tokens <= budget:
            return Fitted(body, tokens, dropped)
    raise ContextTooLong(tokens, window, budget)


def _units(messages: list[dict]) -> tuple[list[dict], list[list[dict]], list[dict]]:
    """(the leading system messages, the droppable units after them, oldest first, the
    rest): a unit is a message, or an assistant message with its tool messages. The rest,
    from the newest user message on, is never dropped."""
    head = 0
    while head < len(messages) and messages[head]["role"] == "system":
        head += 1
    last_user = max((i for i, m in enumerate(messages) if m["role"] == "user"), default=None)
    end = last_user if last_user is not None and last_user >= head else len(messages)
    units: list[list[dict]] = []
    for message in messages[head:end]:
        if message["role"] == "tool" and units:
            units[-1].append(message)
        else:
            units.append([message])
    return messages[:head], units, messages[end:]


def _units_to_drop(route: Route, units: list[list[dict]], excess: int) -> int:
    """How many of the oldest units hold about `excess` tokens (by a local count)."""
    removed = 0
    for position, unit in enumerate(units):
        removed += _local_count(route, unit)
        if removed >= excess:
            return position + 1
    return len(units)


def _local_count(route: Route, unit: list[dict]) -> int:
    """A unit's tokens, counted without asking the upstream (vLLM: the estimate)."""
    text = render_chat({"messages": unit})
    if route.token_counter in ("tokenizer", "estimate"):
        return count_text_tokens(route, text).tokens
    return -(-len(text.encode()) // 4)
