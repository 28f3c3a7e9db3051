"""Cutting a file's text into chunks by OpenAI's `chunking_strategy`, and checking one.

`auto` is `static` with 800-token chunks overlapping by 400 (OpenAI's default); `static`
takes `max_chunk_size_tokens` (100-4096) and `chunk_overlap_tokens` (at most half of it).

Tokens here are an approximation, stated so that chunk sizes are predictable: one token per
word (a run of letters/digits/underscore) or per other non-space character. BPE tokenizers
count about 1.3 tokens per English word, so a chunk here holds somewhat more text than the
same setting at OpenAI. A chunk is the span of the original text from its first token to
its last (whitespace and line breaks inside kept). Pure: no Django.
"""
import re
from dataclasses import dataclass

AUTO = {"max_chunk_size_tokens": 800, "chunk_overlap_tokens": 400}
MIN_CHUNK, MAX_CHUNK = 100, 4096
TOKEN = re.compile(r"\w+|[^\w\s]")


class InvalidChunkingStrategy(ValueError):
    """A `chunking_strategy` of the wrong shape; the message says what is wrong."""


@dataclass(frozen=True)
class Piece:
    text: str
    tokens: int


def strategy_of(value) -> dict:
    """The stored form (`{"type": "static", "static": {...}}`) of a request's strategy
    (None or `{"type": "auto"}`: the default)."""
    if value is None or value == {"type": "auto"}:
        return {"type": "static", "static": dict(AUTO)}
    if not isinstance(value, dict) or value.get("type") not in ("auto", "static"):
        raise InvalidChunkingStrategy("'chunking_strategy.type' must be 'auto' or 'static'.")
    if value["type"] == "auto":
        raise InvalidChunkingStrategy("'chunking_strategy' of type 'auto' takes no other field.")
    static = value.get("static")
    if not isinstance(static, dict) or set(static) != {"max_chunk_size_tokens",
                                                       "chunk_overlap_tokens"}:
        raise InvalidChunkingStrategy(
            "'chunking_strategy.static' must be an object with 'max_chunk_size_tokens' and "
            "'chunk_overlap_tokens'.")
    size, overlap = static["max_chunk_size_tokens"], static["chunk_overlap_tokens"]
    if type(size) is not int or not MIN_CHUNK <= size <= MAX_CHUNK:
        raise InvalidChunkingStrategy(
            f"'max_chunk_size_tokens' must be an integer from {MIN_CHUNK} to {MAX_CHUNK}.")
    if type(overlap) is not int or not 0 <= overlap <= size // 2:
        raise InvalidChunkingStrategy(
            "'chunk_overlap_tokens' must be a non-negative integer at most half of "
            "'max_chunk_size_tokens'.")
    return {"type": "static", "static": {"max_chunk_size_tokens": size,
                                         "chunk_overlap_tokens": overlap}}


def chunk_text(text: str, strategy: dict) -> list[Piece]:
    """The chunks of `text` under a stored strategy (see strategy_of)."""
    size = strategy["static"]["max_chunk_size_tokens"]
    step = size - strategy["static"]["chunk_overlap_tokens"]
    spans = [match.span() for match in TOKEN.finditer(text)]
    pieces = []
    start = 0
    while start < len(spans):
        window = spans[start:start + size]
        pieces.append(Piece(text[window[0][0]:window[-1][1]], len(window)))
        if start + size >= len(spans):
            break
        start += step
    return pieces


def count_tokens(text: str) -> int:
    return sum(1 for _ in TOKEN.finditer(text))
