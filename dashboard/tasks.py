"""The periodic task `celery beat` sends: roll up the closed hours of the last 24 and the
closed days of the last 30, so no page view pays for one (rollup.py)."""
from datetime import datetime, timezone

from celery import shared_task

from .rollup import STEPS, last_closed, roll_up_buckets

ROLLUP_TASK = "dashboard.roll_up_buckets"
KEPT_UP = {"hour": 24, "day": 30}  # the buckets of the windows that read rollups


@shared_task(name=ROLLUP_TASK, ignore_result=True)
def roll_up_recent_buckets() -> int:
    now = datetime.now(timezone.utc)
    written = 0
    for unit, count in KEPT_UP.items():
        last = last_closed(unit, now)
        written += roll_up_buckets(unit, [last - n * STEPS[unit] for n in range(count)], now)
    return written
