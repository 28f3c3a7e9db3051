"""Tick reads: the paced upstream streams of one event loop, read together once a tick
instead of each as its chunk arrives (STREAM_TICK_READS).

A paced stream under load (StreamedResponse.pace, other responses streaming on the same
loop) leaves the event loop's watch: its socket is paused, and every `tick` seconds (the
bus's flush tick) one pass reads what the kernel holds for each such stream
(`Connection.tick_read`), then has the bus flush what the pass's reads wrote
(`after_pass`). A loop of hundreds of model-paced streams so wakes once a tick, not once a
chunk, and handles a tick's chunks one after another while their code is warm.

A chunk waits for the first pass after it arrived, at most a tick (a stream faster than
STREAM_BATCH_MS is read at most once per that interval, as before); before, it was read at
once and its entry waited for the next flush, up to a tick. The first output and the end
are not held for a pass: the stream is paced only from its first output, and from its
finish reason on it is read as it arrives again; the finish reason's own chunk waits for
its pass.

Issue 31 (2026-11-28, `50:300:600`, three pairs, bench/README.md's round 11): worker CPU
per 50 ms-paced response 0.84-0.94x, all-in 0.89-0.97x; a delta's wait before its flush
p50 5.3 -> 11.7-13.3 ms, the response's end +~20 ms at p50.
"""
import asyncio


class TickReads:
    """The connections of one event loop read by the pass, and the pass's timer."""

    def __init__(self, tick: float, after_pass=None):
        self.tick = tick
        self.after_pass = after_pass  # called after each pass: the bus flushes what it read
        self.connections: set = set()
        self.timer: asyncio.TimerHandle | None = None
        self.next_at = 0.0

    def add(self, connection) -> None:
        self.connections.add(connection)
        if self.timer is None:
            loop = connection.loop
            self.next_at = loop.time() + self.tick
            self.timer = loop.call_at(self.next_at, self._timed_pass, loop)

    def discard(self, connection) -> None:
        self.connections.discard(connection)

    def read_now(self, now: float) -> None:
        """One pass: each connection due by `now` (loop time) reads what arrived."""
        for connection in tuple(self.connections):
            if now >= connection.read_after:
                connection.tick_read()
        if self.after_pass is not None:
            self.after_pass()

    def _timed_pass(self, loop) -> None:
        self.timer = None
        self.read_now(loop.time())
        if self.connections:
            self.next_at = max(self.next_at + self.tick, loop.time())
            self.timer = loop.call_at(self.next_at, self._timed_pass, loop)
