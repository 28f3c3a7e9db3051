"""What a request is told, and what is counted, when its hosted tools were dropped
(hosted_tools.catalog): the `X-Gateway-Dropped-Tools` header and a Prometheus counter."""
from observability.metrics import HOSTED_TOOLS_DROPPED

from .catalog import DROPPED_HEADER


def dropped_tools_header(dropped: list[str]) -> dict:
    """The header naming the dropped tool types (none: no header); each drop is counted."""
    if not dropped:
        return {}
    for kind in dropped:
        HOSTED_TOOLS_DROPPED.labels(type=kind).inc()
    return {DROPPED_HEADER: ", ".join(dict.fromkeys(dropped))}
