"""NUL characters, which Postgres text and jsonb cannot hold: refused in a request (a 400
that says so), replaced (by U+FFFD) in what an upstream model or a tool sends, so that a
response holding one is stored like any other."""

NUL_MESSAGE = "Strings in the request may not contain the NUL character (\\u0000)."
REPLACEMENT = "\ufffd"


def contains_nul(value) -> bool:
    """True if a NUL character is in any string (or key) of a parsed JSON value (walked
    with an explicit stack: no recursion on how deep the value nests)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def without_nul(value):
    """A parsed JSON value with each NUL character of its strings and keys replaced."""
    if isinstance(value, str):
        return value.replace("\x00", REPLACEMENT)
    if isinstance(value, dict):
        return {without_nul(k): without_nul(v) for k, v in value.items()}
    if isinstance(value, list):
        return [without_nul(v) for v in value]
    return value


def may_hold_nul(encoded: bytes | str) -> bool:
    """Whether JSON text may hold a NUL character (its escape; rarely a false alarm: an
    escaped backslash followed by `u0000`). Cheap: the common case reads no value."""
    return (b"\\u0000" if isinstance(encoded, bytes) else "\\u0000") in encoded
