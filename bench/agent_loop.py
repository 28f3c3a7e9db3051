"""The agent-loop scenario: clients each running a 20-turn function-tool loop (the model
calls `step` twenty times, the client answers each call, the model then answers in text),
three ways side by side:

* ``direct``    -- Chat Completions on the upstream, the client keeping the whole history;
* ``http``      -- ``POST /v1/responses`` (streamed) through the gateway, each turn chained
  with ``previous_response_id`` (``store: true``: over HTTP a chain must be stored);
* ``websocket`` -- one socket per loop, ``response.create`` frames, ``store: false``
  (the socket holds the chain).

Every client keeps one connection for its loop. A turn is timed from sending its request to
its last event (the upstream's ``[DONE]``, the gateway's ``response.completed``); each loop
is checked: 21 turns, the final text ``Done after 20 steps.``
"""
from __future__ import annotations

import asyncio
import math
import statistics
import time
from urllib.parse import urlsplit

import httpx
import orjson
from websockets.asyncio.client import connect

STEPS = 20
MODEL = f"fake-tool-loop-{STEPS}"
TOOLS = [{"type": "function", "name": "step", "parameters": {"type": "object"}}]
CHAT_TOOLS = [{"type": "function", "function": {"name": "step",
                                                 "parameters": {"type": "object"}}}]
FINAL_TEXT = f"Done after {STEPS} steps."
MODES = ("direct", "http", "websocket")
MIN_TURNS = 100  # a cell's turns at least: clients run loops one after another to get there


def _local(url: str) -> str:
    if urlsplit(url).hostname not in ("127.0.0.1", "localhost"):
        raise ValueError(f"refusing a non-local target: {url}")
    return url.rstrip("/")


async def direct_loop(upstream_url: str, api_key: str) -> list[float]:
    """The loop on the upstream's Chat Completions: the client resends the history."""
    turns, messages = [], [{"role": "user", "content": "go"}]
    async with httpx.AsyncClient(base_url=_local(upstream_url), timeout=60) as client:
        while True:
            started = time.perf_counter()
            body = {"model": MODEL, "messages": messages, "tools": CHAT_TOOLS, "stream": True}
            call, text = {}, ""
            async with client.stream("POST", "/chat/completions", json=body) as reply:
                async for line in reply.aiter_lines():
                    if not line.startswith("data: {"):
                        continue
                    for choice in orjson.loads(line[6:]).get("choices", ()):
                        delta = choice.get("delta") or {}
                        text += delta.get("content") or ""
                        for piece in delta.get("tool_calls") or ():
                            call["id"] = piece.get("id") or call.get("id")
                            call["arguments"] = call.get("arguments", "") + (
                                piece.get("function", {}).get("arguments") or "")
            turns.append(time.perf_counter() - started)
            if not call:
                _check(text, turns)
                return turns
            messages += [{"role": "assistant", "content": None, "tool_calls": [{
                "id": call["id"], "type": "function",
                "function": {"name": "step", "arguments": call["arguments"]}}]},
                {"role": "tool", "tool_call_id": call["id"],
                 "content": f"ok {call['arguments']}"}]


async def http_loop(gateway_url: str, api_key: str) -> list[float]:
    """The loop over HTTP through the gateway, chained with previous_response_id."""
    turns = []
    body = {"model": MODEL, "tools": TOOLS, "stream": True, "input": "go"}
    async with httpx.AsyncClient(base_url=_local(gateway_url), timeout=60,
                                 headers={"Authorization": f"Bearer {api_key}"}) as client:
        while True:
            started = time.perf_counter()
            final = None
            async with client.stream("POST", "/responses", json=body) as reply:
                async for line in reply.aiter_lines():
                    if line.startswith('data: {"type":"response.completed"'):
                        final = orjson.loads(line[6:])["response"]
            turns.append(time.perf_counter() - started)
            body = _next_turn(final, turns, stream=True)
            if body is None:
                return turns


async def websocket_loop(gateway_url: str, api_key: str) -> list[float]:
    """The loop on one socket, store=false: the socket holds the chain."""
    turns = []
    url = _local(gateway_url).replace("http://", "ws://", 1) + "/responses"
    frame = {"type": "response.create", "model": MODEL, "tools": TOOLS, "store": False,
             "input": "go"}
    async with connect(url, additional_headers={"Authorization": f"Bearer {api_key}"},
                       max_size=None) as socket:
        while True:
            started = time.perf_counter()
            await socket.send(orjson.dumps(frame).decode())
            while True:
                message = await socket.recv()
                if message.startswith('{"type":"response.completed"'):
                    final = orjson.loads(message)["response"]
                    break
                if message.startswith('{"type":"error"') or \
                        message.startswith('{"type":"response.failed"'):
                    raise RuntimeError(f"websocket turn failed: {message[:300]}")
            turns.append(time.perf_counter() - started)
            body = _next_turn(final, turns, store=False)
            if body is None:
                return turns
            frame = {"type": "response.create", **body}


def _next_turn(final: dict | None, turns: list, **fields) -> dict | None:
    """The next create body answering the final response's call; None when it answered."""
    if final is None:
        raise RuntimeError("a turn ended without response.completed")
    last = final["output"][-1]
    if last["type"] != "function_call":
        _check(last["content"][0]["text"], turns)
        return None
    return {"model": MODEL, "tools": TOOLS, "previous_response_id": final["id"], **fields,
            "input": [{"type": "function_call_output", "call_id": last["call_id"],
                       "output": f"ok {last['arguments']}"}]}


def _check(text: str, turns: list) -> None:
    if text != FINAL_TEXT or len(turns) != STEPS + 1:
        raise RuntimeError(f"loop ended after {len(turns)} turns with {text!r}")


LOOPS = {"direct": direct_loop, "http": http_loop, "websocket": websocket_loop}


async def measure(mode: str, url: str, api_key: str, concurrency: int) -> dict:
    """`concurrency` clients at once, each running loops one after another (enough for at
    least MIN_TURNS turns in all); their turn latencies and loop times."""
    started = time.perf_counter()
    repeat = max(1, math.ceil(MIN_TURNS / (concurrency * (STEPS + 1))))
    clients = await asyncio.gather(*(_client(LOOPS[mode], url, api_key, repeat)
                                     for _ in range(concurrency)))
    results = [result for client in clients for result in client]
    failed = [r for r in results if isinstance(r, BaseException)]
    done = [r for r in results if not isinstance(r, BaseException)]
    turns = sorted(t for loop_turns, _ in done for t in loop_turns)
    loops = [seconds for _, seconds in done]
    return {"mode": mode, "concurrency": concurrency, "loops": len(done), "failed": len(failed),
            "errors": sorted({repr(e)[:200] for e in failed}),
            "turn_p50_ms": _ms(_pct(turns, 50)), "turn_p99_ms": _ms(_pct(turns, 99)),
            "loop_mean_s": round(statistics.fmean(loops), 3) if loops else None,
            "wall_s": round(time.perf_counter() - started, 2)}


async def _client(loop, url: str, api_key: str, repeat: int) -> list:
    """One client's loops, one after another: (turn latencies, loop seconds) or the error."""
    results = []
    for _ in range(repeat):
        started = time.perf_counter()
        try:
            turns = await loop(url, api_key)
        except Exception as exc:
            results.append(exc)
            continue
        results.append((turns, time.perf_counter() - started))
    return results


def _pct(values: list[float], p: int) -> float | None:
    if not values:
        return None
    return values[min(len(values) - 1, round(p / 100 * (len(values) - 1)))]


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 2)


async def run(upstream_url: str, gateway_url: str, api_key: str, concurrencies, log) -> list:
    """Every mode at every concurrency (direct first, so the others compare with it)."""
    rows = []
    for concurrency in concurrencies:
        for mode in MODES:
            url = upstream_url if mode == "direct" else gateway_url
            log(f"agent loop: {mode}, {concurrency} concurrent loop(s) of {STEPS + 1} turns")
            rows.append(await measure(mode, url, api_key, concurrency))
    return rows


def render(rows: list) -> list[str]:
    """The report's section: turn latency, added over direct, and loop time."""
    lines = ["", f"## Agent loop ({STEPS} tool calls + the answer: {STEPS + 1} turns per loop)",
             "", "| concurrency | mode | loops ok / failed | turn p50 ms | added p50 ms "
             "| turn p99 ms | loop mean s | vs http |", "|---|---|---|---|---|---|---|---|"]
    by_key = {(r["concurrency"], r["mode"]): r for r in rows}
    for row in rows:
        direct = by_key.get((row["concurrency"], "direct"))
        http = by_key.get((row["concurrency"], "http"))
        added = _diff(row["turn_p50_ms"], direct and direct["turn_p50_ms"])
        faster = ""
        if row["mode"] == "websocket" and http and http["loop_mean_s"] and row["loop_mean_s"]:
            faster = f"{(1 - row['loop_mean_s'] / http['loop_mean_s']) * 100:.0f}% faster"
        lines.append(f"| {row['concurrency']} | {row['mode']} | {row['loops']} / "
                     f"{row['failed']} | {row['turn_p50_ms']} | "
                     f"{added if row['mode'] != 'direct' else ''} | {row['turn_p99_ms']} | "
                     f"{row['loop_mean_s']} | {faster} |")
    for row in rows:
        for error in row["errors"]:
            lines.append(f"- {row['mode']} c={row['concurrency']}: {error}")
    return lines


def _diff(value, base):
    return None if value is None or base is None else round(value - base, 2)
