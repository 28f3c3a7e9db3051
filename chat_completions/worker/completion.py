"""A chat completion accumulated from its chunks (pure, no Django): each choice's content,
reasoning, refusal, tool calls and finish reason, and the usage of every upstream turn.

`turn()` starts the next upstream turn of the same completion (the tool loop): the
assistant's text goes on accumulating, tool calls and the finish reason start afresh,
and usage adds up.
"""
from dataclasses import dataclass, field

from responses_app.translation.chunk_shape import TEXT_FIELDS, taken, usage_problem


@dataclass
class Choice:
    """One choice's text fields and tool calls, kept as the pieces the chunks brought and
    joined when read: a long completion's text is copied once, not once per chunk (joined
    per chunk, 30,000 chunks of content took 1.03 s of the worker's loop; 2026-11-28)."""
    index: int
    pieces: dict = field(default_factory=dict)  # content / reasoning_content / refusal -> pieces
    calls: dict = field(default_factory=dict)  # tool call index -> {id, type, function}
    arguments: dict = field(default_factory=dict)  # tool call index -> its arguments' pieces
    finish_reason: str | None = None

    @property
    def texts(self) -> dict:
        """Each text field's text so far."""
        return {name: "".join(pieces) for name, pieces in self.pieces.items()}

    def tool_calls(self) -> list[dict]:
        """The tool calls so far, in order, their arguments joined."""
        for index, pieces in self.arguments.items():
            if len(pieces) > 1:
                pieces[:] = ["".join(pieces)]
            self.calls[index]["function"]["arguments"] = pieces[0] if pieces else ""
        return [self.calls[i] for i in sorted(self.calls)]

    def message(self) -> dict:
        texts = self.texts
        message = {"role": "assistant", "content": texts.get("content"),
                   "refusal": texts.get("refusal")}
        for name in ("reasoning_content", "reasoning"):
            if name in texts:
                message[name] = texts[name]
        if self.calls:
            message["tool_calls"] = self.tool_calls()
        return message


class Completion:
    def __init__(self, completion_id: str, model: str, created: int):
        self.id, self.model, self.created = completion_id, model, created
        self.choices: dict[int, Choice] = {}
        self.usage: dict | None = None  # the turns' usage added up
        self._turn_usage: dict | None = None
        self._turn_pieces: list[str] = []  # the first choice's content in the current turn
        self.system_fingerprint = None

    def feed(self, chunk: dict) -> None:
        """Take one upstream chunk of the current turn (a TypeError if its usage is not a
        usage object, checked once per turn, or if a value it keeps is not of its type: a
        text or arguments, a finish reason, a choice's or a call's index or id:
        chunk_shape)."""
        usage = chunk.get("usage")
        if usage:
            problem = usage_problem(usage)
            if problem is not None:
                raise TypeError(problem)
            self._turn_usage = usage
        if chunk.get("system_fingerprint"):
            self.system_fingerprint = chunk["system_fingerprint"]
        for part in chunk.get("choices") or ():
            index = part.get("index") or 0  # null: the first
            choice = self.choices.get(index)
            if choice is None:  # off shape, the choices' sort would fail at the end
                choice = self.choices[index] = Choice(taken(index, int))
            delta = part.get("delta") or {}
            for name in TEXT_FIELDS:
                if delta.get(name):
                    choice.pieces.setdefault(name, []).append(taken(delta[name], str))
            if choice.index == 0 and delta.get("content"):
                self._turn_pieces.append(delta["content"])
            for position, call in enumerate(delta.get("tool_calls") or ()):
                _add_call(choice, call, position)
            if part.get("finish_reason"):  # off shape, the client would get it as it is
                choice.finish_reason = taken(part["finish_reason"], str)

    def content_added(self, text: str) -> bool:
        """`text`, a non-empty string of content for the first choice, taken as `feed` takes
        a chunk that brings only that (the chat lane: forwarding.py); False, nothing
        changed, while the first choice has not come."""
        choice = self.choices.get(0)
        if choice is None:
            return False
        choice.pieces.setdefault("content", []).append(text)
        self._turn_pieces.append(text)
        return True

    @property
    def turn_content(self) -> str:
        """The first choice's content in the current turn."""
        return "".join(self._turn_pieces)

    @property
    def turn_reported(self) -> bool:
        """Whether the current turn reported its usage (in its stream's last chunk)."""
        return self._turn_usage is not None

    def count_cut_turn(self, usage: dict) -> None:
        """The usage the run counted of a turn cut before it reported one (cut_call.py)."""
        self._turn_usage = usage

    def end_turn(self) -> None:
        """The current turn's usage counts (call once per upstream turn)."""
        if self._turn_usage is not None:
            self.usage = _added(self.usage, self._turn_usage)
            self._turn_usage = None

    def turn(self) -> None:
        """The next upstream turn begins: tool calls and finish reasons start afresh."""
        for choice in self.choices.values():
            choice.calls, choice.arguments, choice.finish_reason = {}, {}, None
        self._turn_pieces = []

    def keep_calls(self, names: set) -> list[dict]:
        """Keep only the first choice's calls to `names` (the client's functions) and set its
        finish reason to match; the calls kept."""
        choice = self.choices.setdefault(0, Choice(0))
        kept = [call for call in self.calls() if call["function"]["name"] in names]
        choice.calls = dict(enumerate(kept))
        choice.arguments = {i: [call["function"]["arguments"]] for i, call in enumerate(kept)}
        if kept:
            choice.finish_reason = "tool_calls"
        elif choice.finish_reason in (None, "tool_calls"):
            choice.finish_reason = "stop"
        return kept

    def calls(self) -> list[dict]:
        """The first choice's tool calls of the current turn, in order."""
        choice = self.choices.get(0)
        return [] if choice is None else choice.tool_calls()

    def closing_chunks(self, kept: list[dict], role_sent: bool,
                       include_usage: bool) -> list[dict]:
        """With MCP tools, the chunks held back: the client's calls (`kept`), the finish
        reason, and the usage of all turns (if the client asked for it); `role_sent`:
        whether a chunk streamed gave the role already."""
        finish = self.choices[0].finish_reason
        head = {"id": self.id, "object": "chat.completion.chunk", "created": self.created,
                "model": self.model}
        delta = {} if role_sent else {"role": "assistant", "content": ""}
        chunks = []
        if kept:
            delta["tool_calls"] = [{"index": i, **call} for i, call in enumerate(kept)]
            chunks.append({**head, "choices": [{"index": 0, "delta": delta,
                                                "logprobs": None, "finish_reason": None}]})
            delta = {}
        chunks.append({**head, "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                            "finish_reason": finish}]})
        if include_usage:
            chunks.append({**head, "choices": [], "usage": self.usage})
        return chunks

    def finished(self) -> dict:
        """The `chat.completion` object."""
        choices = [{"index": c.index, "message": c.message(), "logprobs": None,
                    "finish_reason": c.finish_reason or "stop"}
                   for c in sorted(self.choices.values(), key=lambda c: c.index)]
        return {"object": "chat.completion", "id": self.id, "created": self.created,
                "model": self.model, "choices": choices, "usage": self.usage,
                "system_fingerprint": self.system_fingerprint, "service_tier": None}


def _add_call(choice: Choice, delta: dict, position: int) -> None:
    """A tool call's piece; one without an index (absent or null: an upstream that streams
    one call at a time without it) is the call at its position in the chunk's list, as the
    Responses translator reads it (translation/state_machine.py)."""
    calls = choice.calls
    index = delta.get("index")
    if index is None:
        index = position
    call = calls.get(index)
    function = delta.get("function") or {}
    if call is None:  # off shape, the calls' sort would fail at the end
        index = taken(index, int)
        call = calls[index] = {"id": taken(delta.get("id") or f"call_{index}", str),
                               "type": "function", "function": {"name": "", "arguments": ""}}
        choice.arguments[index] = []
    elif delta.get("id"):
        call["id"] = taken(delta["id"], str)
    call["function"]["name"] += function.get("name") or ""
    if function.get("arguments"):
        choice.arguments[index].append(taken(function["arguments"], str))


def _added(total: dict | None, usage: dict) -> dict:
    if total is None:
        return dict(usage)
    added = dict(total)
    for name in ("prompt_tokens", "completion_tokens", "total_tokens"):
        added[name] = (total.get(name) or 0) + (usage.get(name) or 0)
    return added
