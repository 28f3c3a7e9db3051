"""The one JSON parser of every request body: the streaming create, the DRF views (their
DEFAULT_PARSER_CLASSES) and the WebSocket's client events all read JSON through
`parse_json`, so the same input gets the same 400 on every endpoint.

What it refuses, with a 400 `invalid_request_error` and never a 500 further on:
- text that is not JSON (orjson: NaN, Infinity, a number beyond a double, invalid UTF-8,
  a lone surrogate such as `"\\ud800"`, which no later encoder or Postgres could hold);
- values nested deeper than MAX_DEPTH arrays and objects (code `invalid_json`);
- a NUL character in any string or key (Postgres text and jsonb cannot hold one;
  code `invalid_value`).
Nothing here recurses on the user's data in Python: the depth is checked by orjson's
encoder, the NUL by contains_nul's explicit stack.

A new endpoint gets it by being a DRF view (the default parser class) or, outside DRF, by
calling `parse_json(request.body)`.
"""
import orjson
from rest_framework.parsers import JSONParser

from ..errors import InvalidRequest
from ..create.nul import NUL_MESSAGE, contains_nul, may_hold_nul

# Deep enough for any request (a JSON schema in a tool's parameters nests two levels per
# schema level); shallow enough that what the gateway does with a value later (it nests
# it a few levels deeper in what it stores and sends upstream, orjson encodes at most
# ORJSON_MAX_DEPTH levels, Python's recursion limit is 1000 frames) never fails on it.
MAX_DEPTH = 100
ORJSON_MAX_DEPTH = 254  # orjson.dumps refuses a value nested deeper ("Recursion limit")
SMALL_BODY = 4096  # bytes: below, counting brackets is cheaper than orjson's check
DEPTH_MESSAGE = (f"The JSON of your request is nested too deeply (at most {MAX_DEPTH} "
                 "levels of arrays and objects).")


def parse_json(body: bytes | str, what: str = "body of your request"):
    """The value of a JSON request body (or WebSocket event); InvalidRequest if it is not
    JSON, is nested deeper than MAX_DEPTH, or holds a NUL character."""
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        if str(exc).startswith("depth limit exceeded"):  # orjson's own, past 1024 levels
            raise InvalidRequest(DEPTH_MESSAGE, code="invalid_json") from None
        raise InvalidRequest(f"We could not parse the JSON {what}: {exc}.",
                             code="invalid_json") from None
    if not _within_depth(value, body):
        raise InvalidRequest(DEPTH_MESSAGE, code="invalid_json")
    if may_hold_nul(body) and contains_nul(value):  # Postgres text cannot hold NUL
        raise InvalidRequest(NUL_MESSAGE, code="invalid_value")
    return value


def _within_depth(value, body: bytes | str) -> bool:
    """Whether `value` nests at most MAX_DEPTH arrays and objects deep.

    A small body cannot nest deeper than its count of opening brackets (0.4 us for 75
    bytes). Otherwise orjson's encoder counts the depth in C: the value wrapped in
    ORJSON_MAX_DEPTH - MAX_DEPTH lists encodes if and only if the value itself is within
    MAX_DEPTH (16 us whatever the body, building the wrapper; 110 us for a 306 kB
    Codex-like body, whose bracket count took 340 us and a Python walk of the value
    2.6 ms; orjson.loads of it: 725 us; best of 3 x 300)."""
    if len(body) <= SMALL_BODY:
        brackets = body.count(b"[" if isinstance(body, bytes) else "[")
        if brackets + body.count(b"{" if isinstance(body, bytes) else "{") <= MAX_DEPTH:
            return True
    wrapped = value
    for _ in range(ORJSON_MAX_DEPTH - MAX_DEPTH):
        wrapped = [wrapped]
    try:
        orjson.dumps(wrapped)
    except orjson.JSONEncodeError:  # the only one a decoded value can raise: its depth
        return False
    return True


class JSONBodyParser(JSONParser):
    """DRF's JSON parser class (DEFAULT_PARSER_CLASSES), reading through parse_json."""

    def parse(self, stream, media_type=None, parser_context=None):
        return parse_json(stream.read())
