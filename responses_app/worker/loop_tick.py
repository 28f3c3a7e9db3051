"""The run loop's tick: while many runs stream and none is starting or ending, the loop
looks at its sockets at most once per `WORKER_LOOP_TICK_MS`, so one wake-up serves the
chunks of many streams.

A paced stream's chunk arrives alone (one TCP segment every 50 ms per stream): without a
tick, the loop wakes for nearly every chunk, and each wake-up pays a poll of the sockets
(`epoll_wait`), the loop's own iteration and the setup of the callbacks for one read. With
the tick, the loop's thread sleeps out the rest of the tick after doing what was ready;
the poll that follows finds every socket that became readable meanwhile, and their reads,
translations and bus entries go out in one flush to Redis (the bus writer sends each
poll's entries at once while the tick gathers them: `RedisEventBus.loop_ticking`).

The cost: a chunk that arrives while the loop sleeps waits for the rest of the tick, at
most one tick. Only runs in their steady state are held: the tick sleeps while every run
of the loop has its reads pushed (`pushing()`: after its first delta, until its upstream
turn ends) and at least `WORKER_LOOP_TICK_STREAMS` are; a run starting (up to its first
delta), ending (its result stored, its end published) or between turns keeps the loop
awake, so neither its first delta nor its end waits for a tick. A process with a few
streams is never held (c=1 never is).

Issue 31 (2026-11-27, bench/README.md's "Round 3 (worker)"): the worker's streaming loop
alone 0.84-0.88x the CPU per 50 ms-paced chunk with a 10 ms tick (150 streams).
"""
import asyncio
import time
from contextlib import contextmanager

IDLE_CHECKS = 10  # with fewer streams than the threshold, the loop looks again this many ticks on

_ticks: dict = {}  # event loop -> its LoopTick


class LoopTick:
    """Sleeps out the rest of each tick on `loop`'s thread while its runs are steady.

    One cycle: a timer due at once (`_check`) queues `_rest` behind the callbacks the last
    poll made ready; `_rest`, when they ran, sleeps until a tick after the last wake-up and
    sets the timer again, so the loop's next poll (not waiting: the timer is due) takes
    every socket that became readable during the sleep. Works the same on uvloop and on
    asyncio's loop (both run a due timer before the callbacks it queues).
    `on_change(ticking)` hears when it starts and stops holding the loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop, tick: float, streams: int,
                 on_change=None):
        self.loop, self.tick, self.streams, self.on_change = loop, tick, streams, on_change
        self.runs = 0      # runs on the loop (running())
        self.pushed = 0    # of them, those whose reads are pushed now (pushing())
        self.ticking = False
        self.woke_at = 0.0
        self.handle: asyncio.Handle | None = None
        self.sleeps = 0  # ticks slept out (for the benchmark)

    def start(self) -> None:
        """Begin (from the loop's thread, or before it runs)."""
        _ticks[self.loop] = self
        self.handle = self.loop.call_soon(self._check)

    def stop(self) -> None:
        _ticks.pop(self.loop, None)
        if self.handle is not None:
            self.handle.cancel()
            self.handle = None
        self._ticking(False)

    def steady(self) -> bool:
        """Whether the loop may sleep: enough runs streaming, none starting or ending."""
        return self.pushed >= self.streams and self.pushed >= self.runs

    def _check(self) -> None:
        if self.steady():
            self._ticking(True)
            self.handle = self.loop.call_soon(self._rest)
            return
        self._ticking(False)
        self.woke_at = 0.0
        few = self.pushed < self.streams
        self.handle = self.loop.call_later(self.tick * (IDLE_CHECKS if few else 1), self._check)

    def _rest(self) -> None:
        if self.steady():  # a run may have started or ended since _check
            rest = self.woke_at + self.tick - time.monotonic()
            if rest > 0:
                time.sleep(rest)
                self.sleeps += 1
            self.woke_at = time.monotonic()
        self.handle = self.loop.call_later(0, self._check)

    def _ticking(self, ticking: bool) -> None:
        if ticking != self.ticking:
            self.ticking = ticking
            if self.on_change is not None:
                self.on_change(ticking)


@contextmanager
def running():
    """A run on the running loop: while it is not `pushing()`, the loop does not sleep."""
    tick = _ticks.get(asyncio.get_running_loop())
    if tick is None:
        yield
        return
    tick.runs += 1
    try:
        yield
    finally:
        tick.runs -= 1


@contextmanager
def pushing():
    """A run's upstream reads pushed (its steady state): the loop may sleep out its tick."""
    tick = _ticks.get(asyncio.get_running_loop())
    if tick is None:
        yield
        return
    tick.pushed += 1
    try:
        yield
    finally:
        tick.pushed -= 1
