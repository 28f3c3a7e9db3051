"""The periodic task `celery beat` sends: roll up the closed days of the last 30, so no
page view pays for one (rollup.py)."""
from datetime import datetime, timedelta, timezone

from celery import shared_task

from .rollup import last_closed_day, roll_up_days

ROLLUP_TASK = "dashboard.roll_up_days"
ROLLUP_DAYS = 30


@shared_task(name=ROLLUP_TASK, ignore_result=True)
def roll_up_recent_days() -> int:
    now = datetime.now(timezone.utc)
    last = last_closed_day(now)
    return roll_up_days([last - timedelta(days=n) for n in range(ROLLUP_DAYS)], now)
