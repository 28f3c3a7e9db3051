"""Canned upstream behaviours for the fake OpenAI-compatible LLM server.

Pure data plus tiny helpers, no server code (that lives in ``tests.fake_upstream``).
Each :class:`Scenario` is keyed by the model name a client sends.  Chunks look like
the ``chat.completion.chunk`` objects a vLLM server streams: a first delta with
``role``, content / reasoning / tool-call / refusal deltas, a chunk carrying
``finish_reason`` and a final ``choices: []`` chunk with ``usage``.

Dynamic model names handled by :func:`scenario_for`:

* ``fake-echo``          -- echoes a compact rendering of the request ``messages``;
* ``bench-<n>-<ms>``     -- n content chunks ``"w<i> "`` paced ``ms`` milliseconds apart;
* ``bench-<n>-<ms>-held<k>[-<tag>]`` -- the same, held after ``k`` chunks (keep-alive comments
  meanwhile) until the test releases that model name (``FakeUpstream.release``);
* ``fake-slow-<ms>``     -- ``fake-text`` with a first-byte delay of ``ms`` milliseconds;
* ``fake-tool-caller``   -- scripted by the conversation: after tool results, answers
  ``Results: <result> | <result>``; else each line ``call <function> <json arguments>`` of the
  last user message becomes a tool call (arguments streamed in two pieces); else a last user
  message ``Count from 1 to <n>…`` gets the numbers, one line each, 20 ms apart; else
  ``No tools.``;
* ``fake-citing-caller`` -- ``fake-tool-caller``, but after tool results answers
  ``Found it [1], and more [2].`` (in two pieces): an answer citing hosted tool results;
* ``fake-tool-caller-held-<tag>`` -- ``fake-tool-caller``, but its answer after tool results
  is held after its first two chunks (the role, then ``Results: ``) until the test releases
  that model name: a tool loop's second upstream call, in flight;
* ``fake-tool-caller-drop`` -- ``fake-tool-caller``, but its answer after tool results breaks
  after its first two chunks (the role, then ``Results: ``): the connection is cut, with
  no usage chunk, in a tool loop's second upstream call;
* ``fake-tool-loop-<n>``  -- an agent loop of ``n`` tool calls: while the conversation holds fewer
  than ``n`` tool results, calls ``step`` with ``{"step": <results + 1>}`` (call id
  ``call_step_<results + 1>``); then answers ``Done after <n> steps.``;
* ``fake-tool-loop-<n>-held-<tag>`` -- the same, each stream held after its first two chunks
  (the role, then a call's head or the answer's first piece) until the test releases that
  model name;
* ``fake-bad-shape-<kind>[-apart]`` -- ``fake-bad-chunk``, but its bad chunk is JSON of the
  wrong shape (BAD_SHAPES), sent with the chunks before it, or (``-apart``) 50 ms after them
  (each chunk in a write of its own: the bad one in a read after the first delta's); of a
  kind of BAD_SHAPES_AFTER_A_CALL, after the role chunk and the head of a call to ``look``
  (index 0, arguments ``{"q": 1}``) instead of ``Hello``;
* ``fake-flaky-<status>x<n>[-<tag>]`` -- the first ``n`` requests for this exact model name
  fail with HTTP ``status`` (a 429 carries ``retry-after: 0``), later ones are ``fake-text``
  (the server counts per model name: use a fresh tag per test);
* anything else unknown  -- ``fake-text``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from functools import lru_cache

CREATED = 1700000000


@dataclass(frozen=True)
class Scenario:
    chunks: list[dict] = field(default_factory=list)
    status: int = 200
    error_body: dict | None = None
    headers: dict = field(default_factory=dict)
    drop_after: int | None = None
    # the first `bad_chunk_after` chunks and a malformed one in one write (one read)
    bad_chunk_after: int | None = None
    bad_chunk: bytes | None = None  # its SSE line (None: one that is not JSON)
    bad_chunk_apart: bool = False  # the chunks before it one write each, it in a later one
    first_byte_delay: float = 0.0
    pacing: float = 0.0
    hold_after: int | None = None  # chunks sent before the stream waits to be released


# --------------------------------------------------------------------------- builders


def _chunk(cid: str, model: str, delta: dict, finish: str | None = None) -> dict:
    return {
        "id": f"chatcmpl-{cid}",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }


def _usage(cid: str, model: str, prompt: int, completion: int, reasoning: int = 0, cached: int = 0) -> dict:
    return {
        "id": f"chatcmpl-{cid}",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": model,
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "completion_tokens_details": {"reasoning_tokens": reasoning},
            "prompt_tokens_details": {"cached_tokens": cached},
        },
    }


def _stream(model: str, deltas: list[dict], finish: str, prompt: int = 12, completion: int | None = None,
            reasoning: int = 0, cached: int = 0, finish_in_last: bool = False) -> list[dict]:
    """Role chunk, one chunk per delta, finish chunk (or finish on the last delta), usage chunk."""
    cid = model.replace("-", "")
    chunks = [_chunk(cid, model, {"role": "assistant", "content": ""})]
    chunks += [_chunk(cid, model, d) for d in deltas]
    if finish_in_last and deltas:  # vLLM style: last token and finish_reason share a chunk
        chunks[-1]["choices"][0]["finish_reason"] = finish
    else:
        chunks.append(_chunk(cid, model, {}, finish))
    completion = len(deltas) + reasoning if completion is None else completion
    chunks.append(_usage(cid, model, prompt, completion, reasoning, cached))
    return chunks


def _text(model: str, pieces: list[str], finish: str = "stop", **kw) -> list[dict]:
    return _stream(model, [{"content": p} for p in pieces], finish, **kw)


def _call_head(index: int, call_id: str, name: str, arguments: str = "") -> dict:
    return {"tool_calls": [{"index": index, "id": call_id, "type": "function",
                            "function": {"name": name, "arguments": arguments}}]}


def _call_args(index: int, fragment: str) -> dict:
    return {"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}


def _error(status: int, message: str, etype: str, code: str | None = None, param: str | None = None, **kw) -> Scenario:
    body = {"error": {"message": message, "type": etype, "param": param, "code": code}}
    return Scenario(status=status, error_body=body, **kw)


# --------------------------------------------------------------------------- named scenarios

HELLO = ["Hello", ", world", "!", " How can I", " help?"]

SCENARIOS: dict[str, Scenario] = {
    "fake-text": Scenario(_text("fake-text", HELLO, cached=4)),
    "fake-reasoning": Scenario(_stream(
        "fake-reasoning",
        [{"reasoning_content": p} for p in ["Let me", " think.", " The user", " greets me."]]
        + [{"content": p} for p in ["Hi", " there!"]],
        "stop", reasoning=4)),
    "fake-tools": Scenario(_stream("fake-tools", [
        _call_head(0, "call_abc", "get_weather"),
        _call_head(1, "call_def", "get_time"),
        _call_args(0, '{"city"'),
        _call_args(1, '{"tz": '),
        _call_args(0, ': "Par'),
        _call_args(1, '"Europe/'),
        _call_args(0, 'is"}'),
        _call_args(1, 'Paris"}'),
    ], "tool_calls")),
    "fake-tool-one-piece": Scenario(_stream("fake-tool-one-piece", [
        _call_head(0, "call_one", "lookup", '{"q": "x"}'),
        _call_head(1, "call_two", "ping", ""),
    ], "tool_calls")),
    "fake-text-then-tool": Scenario(_stream("fake-text-then-tool", [
        {"content": "Let me"},
        {"content": " check."},
        _call_head(0, "call_oslo", "get_weather"),
        _call_args(0, '{"city":'),
        _call_args(0, '"Oslo"}'),
    ], "tool_calls")),
    "fake-refusal": Scenario(_stream(
        "fake-refusal", [{"refusal": p} for p in ["I can't", " help with", " that."]], "stop")),
    "fake-length": Scenario(_text("fake-length", ["The answer", " is long", " and"], "length", finish_in_last=True)),
    "fake-drop": Scenario(_text("fake-drop", HELLO), drop_after=2),
    "fake-bad-chunk": Scenario(_text("fake-bad-chunk", HELLO), bad_chunk_after=2),
    "fake-500": _error(500, "upstream exploded", "server_error"),
    "fake-429": _error(429, "Rate limit reached, please retry later.", "rate_limit_exceeded",
                       "rate_limit_exceeded", headers={"retry-after": "7"}),
    "fake-400": _error(400, "max_tokens is too large: 999999. This model's maximum context length is 8192 tokens.",
                       "invalid_request_error", None, "max_tokens"),
    "fake-slow": Scenario(_text("fake-slow", HELLO), first_byte_delay=2.5),
    "fake-json": Scenario(_text("fake-json", ['{"ans', 'wer": ', "42", "}"])),
    # a NUL character (which Postgres cannot store) and a literal backslash-u0000 (which it can)
    "fake-nul": Scenario(_stream("fake-nul", [{"reasoning_content": "Hm\x00m."},
                                              {"content": "a\x00b"}, {"content": " \\u0000 stays"}],
                                 "stop", reasoning=2)),
}


# --------------------------------------------------------------------------- dynamic scenarios

# JSON objects that are not stream chunks: `fake-bad-shape-<kind>`'s bad chunk
BAD_SHAPES = {
    "choices-number": b'{"choices": 5}',
    "choice-number": b'{"choices": [5]}',
    "delta-string": b'{"choices": [{"index": 0, "delta": "x"}]}',
    "tool-calls-number": b'{"choices": [{"index": 0, "delta": {"tool_calls": 7}}]}',
    "usage-number": b'{"choices": [], "usage": 5}',
    # values a reader keeps without reading them: nothing raised as they came (a join, a
    # sort at the end, or the client met them)
    "content-number": b'{"choices": [{"index": 0, "delta": {"content": 5}}]}',
    "content-parts": b'{"choices": [{"index": 0, "delta": {"content": [{"type": "text", '
                     b'"text": "x"}]}}]}',
    "arguments-number": b'{"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, '
                        b'"id": "call_a", "type": "function", "function": {"name": "look", '
                        b'"arguments": 5}}]}}]}',
    "finish-reason-number": b'{"choices": [{"index": 0, "delta": {}, "finish_reason": 5}]}',
    "choice-index-string": b'{"choices": [{"index": "0", "delta": {"content": "x"}}]}',
    # JSON orjson reads but cannot write back (300 levels deep: it writes 254), in a delta
    # of text the text lanes take, or in a key nobody reads
    "delta-deep": b'{"choices": [{"index": 0, "delta": {"content": "x", "deep": '
                  + b"[" * 300 + b"]" * 300 + b"}}]}",
    "unknown-deep": b'{"choices": [{"index": 0, "delta": {"content": "x"}}], "deep": '
                    + b'{"a": ' * 300 + b"1" + b"}" * 300 + b"}",
}
# ... whose bad chunk comes after a tool call's head (index 0, `look`) instead of `Hello`
BAD_SHAPES_AFTER_A_CALL = {
    "call-index-mixed": b'{"choices": [{"index": 0, "delta": {"tool_calls": [{"index": "1", '
                        b'"id": "call_b", "type": "function", "function": {"name": "look", '
                        b'"arguments": "{}"}}]}}]}',
}


@lru_cache(maxsize=32)
def _bad_shape(model: str) -> Scenario | None:
    kind = model.removeprefix("fake-bad-shape-").removesuffix("-apart")
    if not model.startswith("fake-bad-shape-"):
        return None
    if kind in BAD_SHAPES:
        chunks, bad = _text(model, HELLO), BAD_SHAPES[kind]
    elif kind in BAD_SHAPES_AFTER_A_CALL:
        chunks = _stream(model, [_call_head(0, "call_a", "look", '{"q": 1}')], "tool_calls")
        bad = BAD_SHAPES_AFTER_A_CALL[kind]
    else:
        return None
    return replace(SCENARIOS["fake-bad-chunk"], chunks=chunks,
                   bad_chunk=b"data: " + bad + b"\n\n", bad_chunk_apart=model.endswith("-apart"))



def _part_text(content) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content if isinstance(p, dict))


def render_messages(messages: list[dict]) -> str:
    """Compact one-line-per-message rendering used by ``fake-echo``."""
    lines = []
    for m in messages or []:
        role = m.get("role", "?")
        if role == "tool":
            lines.append(f"tool[{m.get('tool_call_id', '')}]: {_part_text(m.get('content'))}")
            continue
        text = _part_text(m.get("content"))
        if text or not m.get("tool_calls"):
            lines.append(f"{role}: {text}")
        for tc in m.get("tool_calls") or []:
            fn = tc.get("function", {})
            lines.append(f"{role}.tool_calls: {fn.get('name', '')}({fn.get('arguments', '')})")
    return "\n".join(lines)


def _split3(text: str) -> list[str]:
    if len(text) < 3:
        return [text, ""] if text else ["", ""]
    a, b = len(text) // 3, 2 * len(text) // 3
    return [text[:a], text[a:b], text[b:]]


@lru_cache(maxsize=256)
def _bench(model: str, n: int, ms: int) -> Scenario:
    cid = model.replace("-", "")
    chunks = [_chunk(cid, model, {"content": f"w{i} "}) for i in range(n)]
    if chunks:  # keep exactly n chunks: the role rides on the first content delta
        chunks[0]["choices"][0]["delta"] = {"role": "assistant", "content": "w0 "}
    chunks.append(_chunk(cid, model, {}, "stop"))
    chunks.append(_usage(cid, model, 10, n))
    return Scenario(chunks, pacing=ms / 1000.0)


@lru_cache(maxsize=256)
def _slow(ms: int) -> Scenario:
    return replace(SCENARIOS["fake-text"], first_byte_delay=ms / 1000.0)


_BENCH = re.compile(r"bench-(\d+)-(\d+)")
_HELD = re.compile(r"bench-(\d+)-(\d+)-held(\d+)(-.*)?")
_FLAKY = re.compile(r"fake-flaky-(\d{3})x(\d+)(-.*)?")


def flaky_failure(model: str) -> tuple[Scenario, int] | None:
    """For ``fake-flaky-…`` names: the failure to serve and how many times, else None."""
    m = _FLAKY.fullmatch(model or "")
    if m is None:
        return None
    status, times = int(m[1]), int(m[2])
    headers = {"retry-after": "0"} if status == 429 else {}
    return _error(status, f"flaky upstream: HTTP {status}", "server_error", headers=headers), times
_SLOW = re.compile(r"fake-slow-(\d+)")
_COUNT = re.compile(r"Count from 1 to (\d+)")
_TOOL_LOOP = re.compile(r"fake-tool-loop-(\d+)(-held-.*)?")
_CALLER_HELD = re.compile(r"fake-tool-caller-held-.*")


def _tool_loop(model: str, steps: int, messages: list[dict]) -> Scenario:
    done = sum(1 for message in messages if message.get("role") == "tool")
    if done >= steps:
        return Scenario(_text(model, ["Done after ", f"{steps} steps."]))
    arguments = f'{{"step": {done + 1}}}'
    return Scenario(_stream(model, [_call_head(0, f"call_step_{done + 1}", "step", arguments[:5]),
                                    _call_args(0, arguments[5:])], "tool_calls"))


def _tool_caller(model: str, messages: list[dict]) -> Scenario:
    results = []
    for message in reversed(messages):
        if message.get("role") != "tool":
            break
        results.insert(0, _part_text(message.get("content")))
    if results and model == "fake-citing-caller":
        return Scenario(_text(model, ["Found it [1], ", "and more [2]."]))
    if results:
        return Scenario(_text(model, ["Results: ", " | ".join(results)]))
    user = next((m for m in reversed(messages) if m.get("role") == "user"), {})
    calls = [line.split(" ", 2) for line in _part_text(user.get("content")).splitlines()
             if line.startswith("call ")]
    counting = _COUNT.match(_part_text(user.get("content")))
    if not calls and counting:
        return Scenario(_text(model, [f"{i}\n" for i in range(1, int(counting[1]) + 1)]),
                        pacing=0.02)
    if not calls:
        return Scenario(_text(model, ["No tools."]))
    deltas = []
    for index, (_, name, *arguments) in enumerate(calls):
        arguments = arguments[0] if arguments else "{}"
        half = len(arguments) // 2
        deltas += [_call_head(index, f"call_{index}", name, arguments[:half]),
                   _call_args(index, arguments[half:])]
    return Scenario(_stream(model, deltas, "tool_calls"))


def _sequential_caller(model: str, request_body: dict) -> Scenario:
    """One call per turn: the user's `call NAME ARGS` lines in order (a call made when the
    tool results since the user's message are as many as the lines before it), then the
    results; with `tool_choice: "none"` it answers how many results it saw."""
    messages = request_body.get("messages", [])
    last_user = max(i for i, m in enumerate(messages) if m.get("role") == "user")
    results = [_part_text(m.get("content")) for m in messages[last_user:] if m.get("role") == "tool"]
    if request_body.get("tool_choice") == "none":
        return Scenario(_text(model, ["No more tools after ", f"{len(results)} results."]))
    calls = [line.split(" ", 2) for line in _part_text(messages[last_user].get("content")).splitlines()
             if line.startswith("call ")]
    if calls and calls[0][1] == "forever":  # `call forever NAME ARGS`: that call every turn
        calls = [["call", *calls[0][2].split(" ", 1)]] * (len(results) + 1)
    if len(results) >= len(calls):
        return Scenario(_text(model, ["Results: ", " | ".join(results)]))
    _, name, *arguments = calls[len(results)]
    arguments = arguments[0] if arguments else "{}"
    half = len(arguments) // 2
    return Scenario(_stream(model, [{"content": f"Calling {name}."},
                                    _call_head(0, f"call_{len(results)}", name, arguments[:half]),
                                    _call_args(0, arguments[half:])], "tool_calls"))


def scenario_for(model: str, request_body: dict) -> Scenario:
    """Scenario for a model name; dynamic names are built here, unknown names get ``fake-text``."""
    if model in SCENARIOS:
        return SCENARIOS[model]
    if model == "fake-echo":
        return Scenario(_text(model, _split3(render_messages(request_body.get("messages", [])))))
    if model in ("fake-tool-caller", "fake-citing-caller"):
        return _tool_caller(model, request_body.get("messages", []))
    if model == "fake-sequential-caller":
        return _sequential_caller(model, request_body)
    if _CALLER_HELD.fullmatch(model or "") or model == "fake-tool-caller-drop":
        messages = request_body.get("messages", [])
        answering = bool(messages) and messages[-1].get("role") == "tool"
        caller = _tool_caller(model, messages)
        if not answering:
            return caller
        return replace(caller, **({"drop_after": 2} if model.endswith("-drop")
                                  else {"hold_after": 2}))
    if bad := _bad_shape(model or ""):
        return bad
    if m := _BENCH.fullmatch(model or ""):
        return _bench(model, int(m[1]), int(m[2]))
    if m := _HELD.fullmatch(model or ""):
        return replace(_bench(model, int(m[1]), int(m[2])), hold_after=int(m[3]))
    if m := _SLOW.fullmatch(model or ""):
        return _slow(int(m[1]))
    if m := _TOOL_LOOP.fullmatch(model or ""):
        loop = _tool_loop(model, int(m[1]), request_body.get("messages", []))
        return replace(loop, hold_after=2) if m[2] else loop
    return SCENARIOS["fake-text"]


def is_cacheable(model: str) -> bool:
    """True when ``scenario_for(model, ...)`` does not depend on the request body."""
    return (model not in ("fake-echo", "fake-tool-caller", "fake-citing-caller",
                          "fake-sequential-caller", "fake-tool-caller-drop")
            and not _TOOL_LOOP.fullmatch(model or "")
            and not _CALLER_HELD.fullmatch(model or ""))


# --------------------------------------------------------------------------- accumulation


def accumulate(scenario: Scenario) -> dict:
    """Fold the chunks into the final message: content, reasoning_content, refusal,
    tool_calls (list of {id, type, function: {name, arguments}} by index), finish_reason, usage."""
    out = {"content": "", "reasoning_content": "", "refusal": "", "tool_calls": {}, "finish_reason": None,
           "usage": None}
    for chunk in scenario.chunks:
        if chunk.get("usage"):
            out["usage"] = chunk["usage"]
        for choice in chunk.get("choices", []):
            delta = choice.get("delta") or {}
            for key in ("content", "reasoning_content", "refusal"):
                out[key] += delta.get(key) or ""
            for tc in delta.get("tool_calls") or []:
                slot = out["tool_calls"].setdefault(
                    tc["index"], {"id": "", "type": "function", "function": {"name": "", "arguments": ""}})
                slot["id"] = tc.get("id") or slot["id"]
                fn = tc.get("function") or {}
                slot["function"]["name"] += fn.get("name") or ""
                slot["function"]["arguments"] += fn.get("arguments") or ""
            if choice.get("finish_reason"):
                out["finish_reason"] = choice["finish_reason"]
    out["tool_calls"] = [out["tool_calls"][i] for i in sorted(out["tool_calls"])]
    return out


def text_of(scenario: Scenario) -> str:
    """Concatenated ``content`` of all deltas."""
    return accumulate(scenario)["content"]
