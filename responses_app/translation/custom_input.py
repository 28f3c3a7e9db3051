"""Decoding a custom tool's raw input out of the upstream's streamed function arguments.

A custom tool is offered upstream as a function of one string argument, `input`, so the
model streams `{"input": "<JSON-escaped text>"}` in pieces. `InputDecoder` turns those
pieces into pieces of the raw text as they arrive: once the arguments are seen to open with
`{"input": "`, every complete character of the string is handed out (an escape split
between pieces, or the first half of a surrogate pair, waits for the next piece).
`finish()` parses the whole arguments and returns the rest of the input; arguments of any
other shape (another key first, or not JSON at all) are decoded only there, whole.
"""
import json
import re

ARGUMENT = "input"
_OPENING = re.compile(r'\s*\{\s*"input"\s*:\s*"')
_ESCAPE_LENGTHS = {"u": 6}
_HIGH_SURROGATE = re.compile(r"\\u[dD][89abAB][0-9a-fA-F]{2}$")


class InputDecoder:
    """The raw input of one custom tool call, decoded while its arguments stream."""

    def __init__(self):
        self.raw = ""
        self.emitted = ""
        self._start: int | None = None   # where the string's characters begin in `raw`
        self._closed = False              # the string's closing quote was seen

    def feed(self, piece: str) -> str:
        """The text this piece of arguments adds to the input ("" if none yet)."""
        self.raw += piece
        if self._start is None:
            match = _OPENING.match(self.raw)
            if match is None:
                return ""
            self._start = match.end()
        if self._closed:
            return ""
        return self._take(_decoded(self._safe_body()))

    def finish(self) -> str:
        """The rest of the input once the arguments are complete."""
        full = _parsed_input(self.raw)
        if full is None:
            full = _decoded(self._safe_body()) if self._start is not None else self.raw
        if not full.startswith(self.emitted):
            return ""  # never contradict what was streamed: the deltas are the input
        return self._take(full)

    def _take(self, text: str) -> str:
        new = text[len(self.emitted):]
        self.emitted = text
        return new

    def _safe_body(self) -> str:
        """The JSON-escaped characters of the string that can be decoded now."""
        body = self.raw[self._start:]
        position, end = 0, len(body)
        while position < end:
            char = body[position]
            if char == '"':
                self._closed = True
                return body[:position]
            if char == "\\":
                width = _ESCAPE_LENGTHS.get(body[position + 1:position + 2], 2)
                if position + width > end or position + 1 >= end:
                    break
                position += width
            else:
                position += 1
        safe = body[:position]
        return safe[:-6] if _HIGH_SURROGATE.search(safe) else safe


def _decoded(escaped: str) -> str:
    try:
        return json.loads(f'"{escaped}"')
    except ValueError:
        return escaped


def _parsed_input(raw: str) -> str | None:
    """The `input` string of complete arguments; the only string value of another object
    (a model that renamed the argument); None if the arguments are not such JSON."""
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    if isinstance(value, str):
        return value
    if not isinstance(value, dict):
        return None
    if isinstance(value.get(ARGUMENT), str):
        return value[ARGUMENT]
    strings = [v for v in value.values() if isinstance(v, str)]
    return strings[0] if len(strings) == 1 else None


def input_as_arguments(text: str) -> str:
    """A custom tool call's input as the function arguments the model would have sent."""
    return json.dumps({ARGUMENT: text}, ensure_ascii=False)
