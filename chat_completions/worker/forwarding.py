"""What a chat run's client gets of each upstream chunk: the general way (`forwarded`,
its `_taken` chunk by chunk) and the text lane (`chat_lane`).

`forwarded`: the chunk with its `id`, `model` and `created` the completion's; the usage
chunk only if the client asked for it; with MCP tools, the text only (tool-call deltas
held, the finish reason and the usage sent at the end: run.py).

The lane, issue 31's Chat Completions side (responses_app/worker/text_lane.py the
Responses one): once a chat run's first entry is out, a read of its paced upstream that
is one whole `data: {chunk}\\n\\n` event (`lone_chunk`) whose chunk only adds content to
the first choice goes from the raw bytes to the run's bus writer in a few calls, without
the general path (`ChunkBatches._decoded` and `_checked`, the run's `_taken_now` and
`_taken`, `Completion.feed`, `forwarded`, `ChatStamper.entry`).

What it does is what the general path does of such a chunk, in the same order: its
content added to the completion (`Completion.content_added`), its system fingerprint
kept, then (a streaming client's run) its id, model and created replaced, its falsy
`usage` dropped unless the client asked for usage, the stamper's next number taken and
the chunk's `orjson.dumps` put on the writer as one entry. Keys it does not read (role,
logprobs, anything else) go through as they are, as `forwarded` passes them. Anything
else is declined, nothing changed, for the general path: the run cancelled or with MCP
tools (no lane then: `forwarded` rebuilds its chunks), a chunk with usage, other or
several choices, a finish reason, empty or non-string content, reasoning, a refusal, tool
calls, a first choice not come yet. tests/test_chat_text_lane.py checks the equivalence
on random reads (entries byte for byte, the stored completion, the failure).

Measured (2026-11-28, bench/README.md's "Round 8 (worker)", "The chat lane"): warm, 2.4 us
a read against 4.2 for `_decoded` + `_taken_now`; the full bench at 50:300:600 (A B B A
twice against main b2796fe) the chat worker 0.83-0.96x a response in its 4 adjacent pairs
(median ~0.94x, ~0.6 ms), all-in 0.87-1.00x; against the same runs' Responses row (code
unchanged) 0.90-0.97x.
"""
import orjson

from responses_app.bus.entries import Entry
from responses_app.translation.chunk_shape import TEXT_FIELDS
from responses_app.translation.text_lane import added_text


def forwarded(run, chunk: dict) -> dict | None:
    """The chunk as `run`'s client gets it, or None."""
    job = run.job
    chunk["id"], chunk["model"], chunk["created"] = job.id, job.model, job.created
    choices = chunk.get("choices")
    if not choices:  # the usage chunk
        if not job.include_usage or run.tools:
            return None  # with MCP tools: the turns' usage added up, at the end
        return chunk
    if not job.include_usage and "usage" in chunk:
        del chunk["usage"]
    if not run.tools:
        return chunk
    kept = []
    for part in choices:
        delta = {key: value for key, value in (part.get("delta") or {}).items()
                 if key != "tool_calls" and not (key == "role" and run.role_sent)}
        if not any(delta.get(key) for key in TEXT_FIELDS) and "role" not in delta:
            continue
        run.role_sent = run.role_sent or "role" in delta
        kept.append({**part, "delta": delta, "finish_reason": None})
    if not kept:
        return None
    chunk["choices"] = kept
    chunk.pop("usage", None)
    return chunk


def chat_lane(run):
    """`run`'s lane (a ChatRun's turn): a callable taking a chunk, which takes it as the
    general path would and returns True, or returns False having changed nothing; None
    for a run whose chunks the lane does not forward (MCP tools)."""
    if run.tools:
        return None
    job, completion, stamper, writer = run.job, run.completion, run.stamper, run.writer
    stream, include_usage = job.stream, job.include_usage
    ident = job.id, job.model, job.created
    added, dumps = completion.content_added, orjson.dumps

    def take(chunk: dict) -> bool:
        if run.cancelled:
            return False
        text = added_text(chunk)
        if text is None or not added(text):
            return False
        if chunk.get("system_fingerprint"):
            completion.system_fingerprint = chunk["system_fingerprint"]
        if stream:
            chunk["id"], chunk["model"], chunk["created"] = ident
            if not include_usage and "usage" in chunk:
                del chunk["usage"]
            number = stamper.next_sequence_number
            stamper.next_sequence_number = number + 1
            writer.put(Entry(number, number, [dumps(chunk)]))
        return True

    return take
