"""The text lane, the read side: a read of a paced stream that is one whole
`data: {chunk}\\n\\n` event adding text to the open output text part goes from the raw
bytes to the bus writer in a few calls (issue 31).

Once a run's first delta is out, each read of the upstream is handed over from the
connection's read callback (`ChunkBatches.push`). The most common read of a model's paced
answer is one such event; through the general path it costs ~20 Python calls and several
objects (the line split, the NUL look, the pace checks, `feed`, a dict per event, its
`orjson.dumps`, `stamped_entry`), ~13 us of the worker's ~20 us of Python per chunk in
situ. Here: `lone_chunk` (one look at the read's framing, one `orjson.loads`), then the
lane (`run_lane`): translation.text_lane makes the event's bytes, an `Entry` holds them,
the run's writer takes it. Anything else goes the general way, unchanged: `lone_chunk`
gives None for a read it does not frame alone, and the lane returns False, having
changed nothing, for a chunk or a state it does not take.

Measured (2026-11-28, bench/README.md's "Round 8 (worker)"): warm (`timeit`),
`_decoded` + `_translated_now` 3.3 us a read against 2.0 for `lone_chunk` (1.0, of it
`orjson.loads` 0.5) and the lane; the streaming loop alone (`bench.paced_worker`)
36.1-46.6 against 40.5-53.2 us a chunk, 0.85-0.90x in 4 adjacent pairs; the full bench
at 50:300:600 (A B B A three times against main 6bc1de9) worker 0.89-1.00x a response
in its 6 adjacent pairs (median 0.92x, ~0.7 ms), all-in 0.91-1.03x.
"""
import orjson

from ..bus.entries import Entry
from ..create.nul import may_hold_nul
from ..translation.chunk_shape import DEEP_BYTES, too_deep
from ..translation.text_lane import TextLane


def lone_chunk(data: bytes) -> dict | None:
    """The chunk of `data` if it is exactly one whole `data:` line and its blank line,
    decoded as the general path would (`ChunkBatches._decoded`); None for anything else
    (several lines, none, `[DONE]`, bad JSON, an error chunk, a possible NUL, a chunk
    nested too deep to write), which the general path reads."""
    if not data.startswith(b"data:") or data.find(b"\n") != len(data) - 2 \
            or data[-1] != 10 or may_hold_nul(data):
        return None
    try:
        chunk = orjson.loads(data[5:-2])
    except orjson.JSONDecodeError:
        return None
    if chunk.__class__ is not dict or chunk.get("error") \
            or len(data) > DEEP_BYTES and too_deep(chunk):
        return None
    return chunk


def run_lane(run):
    """`run`'s lane (a Streaming): a callable taking a chunk, which puts its delta entry
    on the run's writer and returns True, or returns False having changed nothing (the
    run stopping, or a chunk or state the lane does not take: translation.text_lane)."""
    lane = TextLane(run.translator, run.stamper)
    stamped, stamper, writer = lane.stamped, run.stamper, run.writer

    def take(chunk: dict) -> bool:
        if run.stopped is not None:
            return False
        event = stamped(chunk)
        if event is None:
            return False
        number = stamper.next_sequence_number - 1
        writer.put(Entry(number, number, [event]))
        return True

    return take
