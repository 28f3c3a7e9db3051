"""Template filters of the response browser: durations and latencies, human-sized."""
from django import template

register = template.Library()


@register.filter
def duration(seconds) -> str:
    """`850 ms`, `2.4 s`, `3 min 5 s`, `23 h 59 min`; empty for None."""
    if seconds is None:
        return ""
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{int(seconds // 60)} min {int(seconds % 60)} s"
    return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60)} min"


@register.filter
def latency(response) -> str:
    """From created to completed; empty while running."""
    if response.completed_at is None:
        return ""
    return duration((response.completed_at - response.created_at).total_seconds())
