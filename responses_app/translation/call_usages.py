"""The usage of a response's upstream calls, as the state machine keeps it: every end of a
response (completed, incomplete, steered, failed, cancelled) reports the sum of all the
calls of its run, the tool loop's turns and a compaction's summary included, since that
is what its tenant's quota and rate limits are charged (accounting).

A call's usage arrives in its stream (Chat Completions: in the last chunk), so the call in
progress may have none yet; one cut before it came (a steer, a cancel) is counted by the
run (worker/cut_turn.py) and given here. Pure, as the machine.
"""
from .chunk_shape import usage_problem
from .usage import sum_chat_usage, usage_from_chat


class CallUsages:
    def __init__(self):
        self._current: dict | None = None  # the call in progress, once it reported
        self._done: list[dict] = []        # the calls before it (Chat Completions usage)

    def reported(self, chat_usage: dict) -> None:
        """The call in progress reported its usage: a TypeError if it is not a usage
        object (chunk_shape.py: checked once per call, as it comes)."""
        problem = usage_problem(chat_usage)
        if problem is not None:
            raise TypeError(problem)
        self._current = chat_usage

    def turn_ended(self) -> None:
        """The call in progress is over: the next call reports its own."""
        if self._current:
            self._done.append(self._current)
        self._current = None

    def add_call(self, chat_usage: dict | None) -> None:
        """A call made beside the turns (a compaction's summary), with its usage if any."""
        if chat_usage:
            self._done.append(chat_usage)

    @property
    def current_missing(self) -> bool:
        """Whether the call in progress (if any) has reported no usage yet."""
        return self._current is None

    def total(self) -> dict | None:
        """The Responses `usage` of every call so far (None: none reported any)."""
        usages = self._done + ([self._current] if self._current else [])
        return usage_from_chat(sum_chat_usage(usages))
