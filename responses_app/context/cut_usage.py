"""The usage of an upstream call cut before it reported one (a steered run: its stream is
closed mid-generation, and Chat Completions reports usage only in its last chunk).

Its tokens were spent all the same, and a response's usage is what its tenant's quota and
rate limits are charged (accounting): uncounted, steering would make every cut call free.
So the gateway counts them as it counts a context window (upstreams.token_counting, the
route's counter): the input on the chat request sent, the output on what the model
generated of it, as the output items hold it (message and reasoning text, refusals, call
arguments and inputs). A counter that fails falls back to the estimate (UTF-8 bytes / 4).
Sync: the `vllm` and `llamacpp` counters ask the upstream (a run calls it on a thread).
"""
from dataclasses import replace

import orjson

from upstreams.routing import Route
from upstreams.token_counting import CountFailed, count_chat_tokens, count_text


def cut_usage(route: Route, body: dict, items: list[dict]) -> dict:
    """The Chat Completions usage of the call of `body` that generated `items`, counted."""
    return counted_usage(route, body, generated_text(items))


def counted_usage(route: Route, body: dict, text: str) -> dict:
    """The Chat Completions usage of the call of `body` that generated `text`, counted (a
    chat completion's run gives its text as it accumulated it)."""
    try:
        prompt = count_chat_tokens(route, body).tokens
        completion = count_text(route, text).tokens if text else 0
    except CountFailed:
        estimate = replace(route, token_counter="estimate")
        prompt = count_chat_tokens(estimate, body).tokens
        completion = count_text(estimate, text).tokens if text else 0
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion}


def generated_text(items: list[dict]) -> str:
    """What the model generated of these output items, as text (in output order)."""
    return "".join(_item_text(item) for item in items)


def _item_text(item: dict) -> str:
    if item.get("type") in ("message", "reasoning"):
        parts = [*(item.get("content") or ()), *(item.get("summary") or ())]
        return "".join(part.get("text") or part.get("refusal") or "" for part in parts)
    for key in ("arguments", "input", "action", "operation"):  # calls of every kind
        value = item.get(key)
        if isinstance(value, str):
            return value
        if value is not None:
            return orjson.dumps(value).decode()
    return ""
