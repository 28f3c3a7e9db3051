"""The `context_management` create parameter: `[{"type": "compaction", "compact_threshold":
N}]`, server-side compaction when the rendered input crosses N tokens (N >= 1; without N,
at 80% of the route's context window when it is known, else never)."""
from ..errors import InvalidRequest

DEFAULT_THRESHOLD_SHARE = 0.8
SCHEMA = {"type": "array", "items": {
    "type": "object", "required": ["type"],
    "properties": {"type": {"enum": ["compaction"]},
                   "compact_threshold": {"type": "integer", "minimum": 1}}}}


def parse_context_management(value, param: str) -> list[dict] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise InvalidRequest(f"'{param}' must be an array.", param=param, code="invalid_type")
    entries = []
    for position, entry in enumerate(value):
        where = f"{param}[{position}]"
        if not isinstance(entry, dict) or entry.get("type") != "compaction":
            raise InvalidRequest(f"Invalid value for '{where}.type': only 'compaction' is "
                                 f"supported.", param=f"{where}.type", code="invalid_value")
        threshold = entry.get("compact_threshold")
        if threshold is not None and (isinstance(threshold, bool)
                                      or not isinstance(threshold, int) or threshold < 1):
            raise InvalidRequest(f"Invalid '{where}.compact_threshold': expected an integer "
                                 f"greater than or equal to 1.",
                                 param=f"{where}.compact_threshold", code="invalid_value")
        entries.append({"type": "compaction", "compact_threshold": threshold})
    return entries


def compact_threshold(params: dict, window: int | None) -> int | None:
    """The token count past which the run compacts first; None: it does not."""
    for entry in params.get("context_management") or ():
        if entry["compact_threshold"] is not None:
            return entry["compact_threshold"]
        if window:
            return int(window * DEFAULT_THRESHOLD_SHARE)
    return None
