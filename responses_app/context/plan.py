"""What a run must do about its context before it calls the upstream: nothing (a route
whose window is unknown and a request without `context_management`: not even a count),
or count its input against the compaction threshold and the window (sync: it may ask the
upstream; a run calls it on a thread)."""
from dataclasses import dataclass

from upstreams.routing import Route
from upstreams.token_counting import context_window, count_chat_tokens

from ..create.context_management import compact_threshold


@dataclass
class Measured:
    window: int | None
    threshold: int | None
    tokens: int | None


def needs_context(route: Route, params: dict) -> bool:
    """Whether the run may have to compact or fit its input (cheap: no I/O)."""
    return bool(route.context_window or route.token_counter == "vllm"
                or params.get("context_management"))


def measure(route: Route, model: str, params: dict, body: dict) -> Measured:
    window = context_window(route, model)
    threshold = compact_threshold(params, window)
    if window is None and threshold is None:
        return Measured(None, None, None)
    return Measured(window, threshold, count_chat_tokens(route, body).tokens)


def count_tokens(route: Route, body: dict) -> int:
    return count_chat_tokens(route, body).tokens
