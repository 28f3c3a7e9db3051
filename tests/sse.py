"""Strict parser for the gateway's SSE wire framing (PROTOCOL.md, "Streaming (SSE)").

This module owns *framing* only: how bytes are cut into blocks and what a block may
look like. It knows nothing about event semantics (see ``tests.invariants``) or schemas
(see ``tests.oracles``).

Accepted grammar (anything else raises ``AssertionError``)::

    stream   := block* done-block?
    block    := (comment | event) "\\n\\n"
    comment  := ":" text ("\\n" ":" text)*           -- a keep-alive
    event    := "event: " TYPE "\\n" "data: " JSON   -- JSON is an object whose "type" == TYPE
    done     := "data: [DONE]\\n\\n"                  -- must be the very last block

Line endings are ``\\n`` only; a ``\\r`` anywhere is an error. An event has exactly one
``data:`` line. Nothing (not even a keep-alive) may follow ``[DONE]``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

__all__ = ["ParsedStream", "parse_sse", "parse_sse_chunks"]

_EVENT_PREFIX = "event: "
_DATA_PREFIX = "data: "
_DONE_LINE = "data: [DONE]"
_SEPARATOR = "\n\n"


@dataclass
class ParsedStream:
    events: list[dict] = field(default_factory=list)
    keepalives: int = 0
    done: bool = False


def _reject_constant(name: str):
    raise AssertionError(f"SSE data contains non-standard JSON constant {name!r}")


def _parse_event_block(lines: list[str], block_no: int) -> dict:
    assert len(lines) == 2, (
        f"SSE block #{block_no}: an event block must be exactly 2 lines "
        f"('event: <type>', 'data: <json>'), got {len(lines)}: {lines!r}"
    )
    event_line, data_line = lines
    assert event_line.startswith(_EVENT_PREFIX), (
        f"SSE block #{block_no}: first line must start with {_EVENT_PREFIX!r}, got {event_line!r}"
    )
    assert data_line.startswith(_DATA_PREFIX), (
        f"SSE block #{block_no}: second line must start with {_DATA_PREFIX!r}, got {data_line!r}"
    )
    name = event_line[len(_EVENT_PREFIX):]
    assert name != "", f"SSE block #{block_no}: empty event name"
    payload = data_line[len(_DATA_PREFIX):]
    try:
        obj = json.loads(payload, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise AssertionError(f"SSE block #{block_no}: data is not valid JSON ({exc}): {payload!r}") from None
    assert isinstance(obj, dict), f"SSE block #{block_no}: data must be a JSON object, got {type(obj).__name__}"
    assert "type" in obj, f"SSE block #{block_no}: data object has no 'type'"
    assert obj["type"] == name, (
        f"SSE block #{block_no}: 'event: {name}' does not match data type {obj['type']!r}"
    )
    return obj


def parse_sse(raw: bytes, *, require_done: bool = True) -> ParsedStream:
    """Parse a complete SSE body, asserting the framing strictly.

    ``require_done=False`` allows a stream that stops without ``data: [DONE]`` (e.g. a
    client that disconnected on purpose); the result's ``done`` then tells which.
    """
    assert isinstance(raw, (bytes, bytearray)), f"parse_sse expects bytes, got {type(raw).__name__}"
    assert b"\r" not in raw, "SSE body contains '\\r': line endings must be '\\n' only"
    try:
        text = bytes(raw).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise AssertionError(f"SSE body is not valid UTF-8: {exc}") from None

    result = ParsedStream()
    if text == "":
        assert not require_done, "SSE body is empty (no 'data: [DONE]')"
        return result
    assert text.endswith(_SEPARATOR), f"SSE body must end with a blank line ('\\n\\n'); tail: {text[-80:]!r}"

    blocks = text[: -len(_SEPARATOR)].split(_SEPARATOR)
    for block_no, block in enumerate(blocks):
        assert not result.done, f"SSE block #{block_no} comes after 'data: [DONE]': {block[:120]!r}"
        lines = block.split("\n")
        assert "" not in lines, (
            f"SSE block #{block_no} has an empty line (stray blank line / separator): {block[:120]!r}"
        )
        if lines[0].startswith(":"):
            non_comment = [line for line in lines if not line.startswith(":")]
            assert non_comment == [], f"SSE block #{block_no} mixes comment and field lines: {lines!r}"
            result.keepalives += 1
        elif lines == [_DONE_LINE]:
            result.done = True
        else:
            result.events.append(_parse_event_block(lines, block_no))

    if require_done:
        assert result.done, "SSE stream does not end with 'data: [DONE]'"
    return result


def parse_sse_chunks(
    chunks: list[bytes], *, require_done: bool = True, one_block_per_chunk: bool = False
) -> ParsedStream:
    """Parse a stream given as the server's individual writes, asserting no block is split.

    Opt-in, and only meaningful where each chunk IS one server write: in-process ASGI/WSGI
    tests that collect the response body messages. Over a real TCP connection reads may
    split anywhere, so use ``parse_sse(b"".join(chunks))`` there instead.

    Every non-empty chunk must hold whole blocks only (it ends with ``\\n\\n`` and the
    previous chunk ended on a block boundary). Empty chunks (e.g. a final ASGI
    ``more_body=False`` message) are ignored. With ``one_block_per_chunk=True`` each
    non-empty chunk must hold exactly one block (PROTOCOL: "each event is written as ONE
    chunk").
    """
    for index, chunk in enumerate(chunks):
        assert isinstance(chunk, (bytes, bytearray)), f"chunk #{index} is {type(chunk).__name__}, not bytes"
        if chunk == b"":
            continue
        assert chunk.endswith(b"\n\n"), (
            f"chunk #{index} does not end on a block boundary (a block is split across writes): "
            f"{bytes(chunk[-80:])!r}"
        )
        # A separator anywhere else means the chunk holds several blocks; each is whole
        # because the chunk ends on a boundary and the previous one did too.
        inner_blocks = bytes(chunk[:-2]).split(b"\n\n")
        assert b"" not in inner_blocks, f"chunk #{index} contains an empty block: {bytes(chunk[:120])!r}"
        if one_block_per_chunk:
            assert len(inner_blocks) == 1, (
                f"chunk #{index} holds {len(inner_blocks)} blocks; expected one block per write"
            )
    return parse_sse(b"".join(bytes(c) for c in chunks), require_done=require_done)
