"""The many-sockets check of WebSocket mode: N sockets open at once (all connected before
any of them starts, all held open until every one has finished), each running one short
function-tool loop (`fake-tool-loop-3`: three calls of `step`, then the answer;
`store: false`, the socket holds the chain).

Every response's events are checked as they arrive: sequence numbers must run 0, 1, 2, …
(a gap counts the missing events as lost, a number lower than the last as reordered), the
first event is `response.created`, the last `response.completed`, and every turn of a kind
(a call, the answer) must have the same list of event types as the others (else it counts
as differing). Bounded in count (N sockets, one loop each) and in time (DEADLINE seconds
for the whole cell: sockets still running then count as failed).
"""
from __future__ import annotations

import asyncio
import os
import time
from collections import Counter

import orjson
from websockets.asyncio.client import connect

from bench.agent_loop import TOOLS, _local, _ms, _pct

STEPS = 3
MODEL = f"fake-tool-loop-{STEPS}"
FINAL_TEXT = f"Done after {STEPS} steps."
DEADLINE = 300.0  # seconds for the whole cell


class Tally:
    """What the sockets saw: lost and reordered events, turn shapes, turn latencies."""

    def __init__(self):
        self.lost = self.reordered = self.events = 0
        self.shapes: dict[str, Counter] = {"call": Counter(), "answer": Counter()}
        self.turns: list[float] = []

    def turn(self, events: list[dict], seconds: float) -> dict:
        """Check one response's events; its final response object."""
        expected = 0
        for event in events:
            number = event.get("sequence_number", -1)
            if number < expected:
                self.reordered += 1
            else:
                self.lost += number - expected
                expected = number + 1
        self.events += len(events)
        types = tuple(event["type"] for event in events)
        if types[0] != "response.created" or types[-1] != "response.completed":
            raise RuntimeError(f"a turn ran {types[0]} … {types[-1]}")
        final = events[-1]["response"]
        kind = "call" if final["output"][-1]["type"] == "function_call" else "answer"
        self.shapes[kind][types] += 1
        self.turns.append(seconds)
        return final


async def socket_loop(url: str, api_key: str, tally: Tally, connected: list,
                      go: asyncio.Event, finished: asyncio.Event) -> None:
    """One socket: connect, wait for all, run the loop, stay open until all have run."""
    async with connect(url, additional_headers={"Authorization": f"Bearer {api_key}"},
                       max_size=None, open_timeout=60, ping_timeout=None) as socket:
        connected.append(1)
        await go.wait()
        frame = {"type": "response.create", "model": MODEL, "tools": TOOLS, "store": False,
                 "input": "go"}
        for _ in range(STEPS + 1):
            started, events = time.perf_counter(), []
            await socket.send(orjson.dumps(frame).decode())
            while True:
                event = orjson.loads(await socket.recv())
                if event["type"] in ("error", "response.failed"):
                    raise RuntimeError(f"turn failed: {orjson.dumps(event)[:300]!r}")
                events.append(event)
                if event["type"] == "response.completed":
                    break
            final = tally.turn(events, time.perf_counter() - started)
            last = final["output"][-1]
            if last["type"] != "function_call":
                if last["content"][0]["text"] != FINAL_TEXT:
                    raise RuntimeError(f"loop ended with {last['content'][0]['text']!r}")
                break
            frame = {"type": "response.create", "model": MODEL, "tools": TOOLS,
                     "store": False, "previous_response_id": final["id"],
                     "input": [{"type": "function_call_output", "call_id": last["call_id"],
                                "output": f"ok {last['arguments']}"}]}
        else:
            raise RuntimeError("the loop did not end")
        await finished.wait()


async def run(gateway_url: str, api_key: str, sockets: int, log) -> dict:
    """`sockets` sockets at once, each one loop; the figures of the cell."""
    url = _local(gateway_url).replace("http://", "ws://", 1) + "/responses"
    tally, connected = Tally(), []
    go, finished = asyncio.Event(), asyncio.Event()
    load_before = os.getloadavg()
    started = time.perf_counter()
    log(f"sockets: opening {sockets} WebSockets, then a {STEPS + 1}-turn loop on each ...")
    tasks = [asyncio.ensure_future(socket_loop(url, api_key, tally, connected, go, finished))
             for _ in range(sockets)]
    while len(connected) + sum(t.done() for t in tasks) < sockets \
            and time.perf_counter() - started < DEADLINE / 3:
        await asyncio.sleep(0.05)
    connect_s = time.perf_counter() - started
    peak = len(connected)
    go.set()
    running = [t for t in tasks if not t.done()]
    loops_started = time.perf_counter()
    # A socket whose loop has ended waits, open, for the others; one that is done failed.
    while sum(tally.shapes["answer"].values()) + sum(t.done() for t in running) \
            < len(running) and time.perf_counter() - started < DEADLINE:
        await asyncio.sleep(0.05)
    loops_s = time.perf_counter() - loops_started
    answers = sum(tally.shapes["answer"].values())
    finished.set()
    done, pending = await asyncio.wait(tasks, timeout=30)
    for task in pending:
        task.cancel()
    errors = [t.exception() for t in done if t.exception() is not None]
    differing = sum(sum(c.values()) - max(c.values(), default=0)
                    for c in tally.shapes.values())
    turns = sorted(tally.turns)
    return {"sockets": sockets, "connected": peak, "loops_ok": answers,
            "failed": sockets - answers, "errors": sorted({repr(e)[:200] for e in errors})
            + (["%d socket(s) still running at the deadline" % len(pending)] if pending else []),
            "events": tally.events, "lost": tally.lost, "reordered": tally.reordered,
            "differing": differing, "turn_p50_ms": _ms(_pct(turns, 50)),
            "turn_p99_ms": _ms(_pct(turns, 99)), "connect_s": round(connect_s, 2),
            "loops_s": round(loops_s, 2), "load_before": [round(x, 2) for x in load_before],
            "load_after": [round(x, 2) for x in os.getloadavg()]}


def render(row: dict) -> list[str]:
    return ["", f"## {row['sockets']} concurrent WebSockets ({STEPS + 1}-turn tool loop each)",
            "", "| connected | loops ok / failed | events | lost | reordered | differing "
            "| turn p50 ms | turn p99 ms | connect s | loops s | load before → after |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
            f"| {row['connected']} | {row['loops_ok']} / {row['failed']} | {row['events']} | "
            f"{row['lost']} | {row['reordered']} | {row['differing']} | {row['turn_p50_ms']} | "
            f"{row['turn_p99_ms']} | {row['connect_s']} | {row['loops_s']} | "
            f"{row['load_before'][0]} → {row['load_after'][0]} |"] + [
            f"- {error}" for error in row["errors"]]
