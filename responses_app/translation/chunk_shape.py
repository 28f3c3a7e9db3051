"""The shape of a Chat Completions stream chunk, as the gateway reads it: what makes a
decoded JSON object a chunk, or says why it is not one (`chunk_problem`).

It is not checked as chunks arrive (that would cost every chunk of every response): the
readers (worker.chunk_batches, the state machine, the chat completion) read a chunk as
if it had this shape, and only when one of them fails on a chunk (TypeError,
AttributeError, KeyError, ValueError) is the chunk checked here. Off shape, the upstream
sent a malformed chunk (the stream fails as for one that is not JSON); of this shape,
the failure is the gateway's own bug (its run's crash path logs it).

A call's `usage` is the exception, checked as it is reported (`usage_problem`, once per
upstream call, not per chunk): it is kept, not read, until the response's end, where a
bad one would break the response's usage (and the end of its failure) instead of failing
the stream it came in. So are the other values a reader keeps without reading, where a
wrong type would raise nothing as it arrives (a later join or sort, or the client, would
meet it): a finish reason, a choice's or a tool call's index, a call's name and id
(`taken` where the reader takes them: once per response, choice or call), a delta's text
and a call's arguments (a type test in the branch that takes a non-empty one, ~5 ns: a
text is joined only when its item closes, after its delta events went out). Each raises
TypeError there, and the chunk is then checked as any other.

Absent keys and null values are allowed everywhere (a reader takes them as empty); keys
the gateway does not read are not looked at (a usage's other details, a delta's `role`).

How deep a chunk nests is checked as it is decoded (`too_deep`, worker.chunk_batches; the
text lane leaves such a chunk to it): orjson reads JSON 1024 levels deep but writes only
254, so a chunk nested deeper, even in a key nobody reads, would break the write of the
event made of it (the chat stream forwards its chunks whole) and crash the run. Only a
payload long enough to nest so deep is looked at: the common chunk pays one comparison,
`len(payload) > DEEP_BYTES`, ~0.03 us (timeit, 2026-11-28; `_decode` of a 236-byte chunk
1.0 us, and `lone_chunk` 1.9, before and after, within noise).
"""
import orjson

TEXT_FIELDS = ("content", "reasoning_content", "reasoning", "refusal")  # reasoning: vLLM's
TOKEN_FIELDS = ("prompt_tokens", "completion_tokens", "total_tokens")
DETAIL_FIELDS = {"prompt_tokens_details": "cached_tokens",
                 "completion_tokens_details": "reasoning_tokens"}


# orjson writes JSON at most 254 levels deep; the events made of a chunk nest its parts up
# to two levels deeper than it does (a logprob: 6 levels into its chunk, 8 into
# `response.completed`), so a chunk may nest 252 levels.
DEEPEST = 252
DEEP_BYTES = 2 * DEEPEST  # JSON no longer than this nests no deeper: a level costs 2 bytes


def too_deep(chunk: dict) -> bool:
    """Whether `chunk` nests deeper than DEEPEST levels: whether orjson fails to write it
    two levels down (its own walk: timeit, 0.5-1.0 us for a chunk of 1.5 KB; callers ask
    only for a payload longer than DEEP_BYTES)."""
    try:
        orjson.dumps([[chunk]])
    except TypeError:  # "Recursion limit reached"
        return True
    return False


def chunk_problem(chunk) -> str | None:
    """Why `chunk` is not a stream chunk's shape (None: it is one)."""
    if not isinstance(chunk, dict):
        return "the chunk is not an object"
    if chunk.get("usage"):
        problem = usage_problem(chunk["usage"])
        if problem is not None:
            return problem
    choices = chunk.get("choices")
    if choices is None:
        return None
    if not isinstance(choices, list):
        return "`choices` is not an array"
    for choice in choices:
        problem = _choice_problem(choice)
        if problem is not None:
            return problem
    return None


def usage_problem(usage) -> str | None:
    """Why a chunk's `usage` is not a usage object (None: it is one)."""
    if not isinstance(usage, dict):
        return "`usage` is not an object"
    for name in TOKEN_FIELDS:
        if not _count(usage.get(name)):
            return f"`usage.{name}` is not a count of tokens"
    for name, count in DETAIL_FIELDS.items():
        details = usage.get(name)
        if details is not None and (not isinstance(details, dict)
                                    or not _count(details.get(count))):
            return f"`usage.{name}.{count}` is not a count of tokens"
    return None


def taken(value, kind: type):
    """`value`, which a reader takes as a `kind` (TypeError if it is not one: the chunk
    holding it is then checked, `chunk_problem`)."""
    if value.__class__ is not kind:
        raise TypeError(f"a {kind.__name__} was expected, not {value.__class__.__name__}")
    return value


def _choice_problem(choice) -> str | None:
    if not isinstance(choice, dict):
        return "a choice is not an object"
    if not _optional(choice.get("index"), int):
        return "a choice's `index` is not an integer"
    if not _optional(choice.get("finish_reason"), str):
        return "a choice's `finish_reason` is not a string"
    logprobs = choice.get("logprobs")
    if logprobs is not None and (not isinstance(logprobs, dict)
                                 or not _optional(logprobs.get("content"), list)):
        return "a choice's `logprobs` is not an object with a `content` array"
    delta = choice.get("delta")
    if delta is None:
        return None
    if not isinstance(delta, dict):
        return "a choice's `delta` is not an object"
    for name in TEXT_FIELDS:
        if not _optional(delta.get(name), str):
            return f"a delta's `{name}` is not a string"
    calls = delta.get("tool_calls")
    if calls is None:
        return None
    if not isinstance(calls, list):
        return "a delta's `tool_calls` is not an array"
    for call in calls:
        problem = _call_problem(call)
        if problem is not None:
            return problem
    return None


def _call_problem(call) -> str | None:
    if not isinstance(call, dict):
        return "a tool call is not an object"
    if not _optional(call.get("index"), int):
        return "a tool call's `index` is not an integer"
    if not _optional(call.get("id"), str) or not _optional(call.get("type"), str):
        return "a tool call's `id` or `type` is not a string"
    function = call.get("function")
    if function is None:
        return None
    if not isinstance(function, dict) or not all(
            _optional(function.get(name), str) for name in ("name", "arguments")):
        return "a tool call's `function` is not an object of a name and arguments"
    return None


def _optional(value, kind: type) -> bool:
    return value is None or (isinstance(value, kind) and not isinstance(value, bool))


def _count(value) -> bool:
    return _optional(value, int)
