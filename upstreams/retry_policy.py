"""When to try an upstream again: only before it sent a byte, on errors that say "later".

Pure (no Django, no I/O): the worker's upstream client asks `delay_before_retry` after
each failed attempt and sleeps that long, or gives up on None. Output that has begun is
never retried: a client cannot un-see a delta.
"""
import math
import random
from dataclasses import dataclass
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime

RETRYABLE_STATUSES = frozenset({429, 502, 503, 504})


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 0
    # The longest single wait: a Retry-After above it is not waited for (the client gets
    # the upstream's answer at once, with its Retry-After).
    max_wait: float = 5.0
    base_delay: float = 0.25


def delay_before_retry(policy: RetryPolicy, retries_made: int, *, status: int | None = None,
                       retry_after: str | None = None, jitter: float | None = None,
                       now: datetime | None = None) -> float | None:
    """Seconds to wait before the next attempt, or None to give up.

    `status` is None for a connection that failed before any response (always retryable).
    Without a usable Retry-After the wait is exponential backoff with jitter, capped.
    """
    if retries_made >= policy.max_retries:
        return None
    if status is not None and status not in RETRYABLE_STATUSES:
        return None
    if retry_after is not None:
        seconds = parse_retry_after(retry_after, now)
        if seconds is not None:
            return seconds if seconds <= policy.max_wait else None
    factor = random.uniform(0.5, 1.0) if jitter is None else jitter
    return min(policy.max_wait, policy.base_delay * 2 ** retries_made * factor)


def parse_retry_after(value: str, now: datetime | None = None) -> float | None:
    """A Retry-After header (delta-seconds or an HTTP date) in seconds; None if unreadable."""
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            moment = parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=timezone.utc)
        seconds = (moment - (now or datetime.now(timezone.utc))).total_seconds()
    if not math.isfinite(seconds):
        return None
    return max(0.0, seconds)
