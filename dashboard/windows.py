"""The dashboard's windows: how far back it looks and the width of its chart buckets.

- hour: the last 60 minutes, one bucket a minute;
- day: the last 24 hours, one bucket an hour;
- 30d: the last 30 UTC days (today and the 29 before), one bucket a day.
Buckets are UTC; every bucket of a window is shown, empty ones as zeros.
"""
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

WINDOWS = {  # name: (label, bucket unit (date_trunc's), bucket width, buckets)
    "hour": ("last hour", "minute", timedelta(minutes=1), 60),
    "day": ("last 24 hours", "hour", timedelta(hours=1), 24),
    "30d": ("last 30 days", "day", timedelta(days=1), 30),
}
DEFAULT_WINDOW = "day"


@dataclass(frozen=True)
class Window:
    name: str
    label: str
    unit: str  # date_trunc's field: minute, hour or day
    step: timedelta
    since: datetime  # the first bucket's start
    until: datetime  # now: the end of the last bucket's data

    @property
    def buckets(self) -> list[datetime]:
        """Every bucket's start, oldest first."""
        count = round((truncated(self.until, self.unit) - self.since) / self.step) + 1
        return [self.since + i * self.step for i in range(count)]


def truncated(moment: datetime, unit: str) -> datetime:
    """The start of the UTC `unit` (minute, hour, day) that holds `moment`."""
    moment = moment.astimezone(timezone.utc).replace(second=0, microsecond=0)
    if unit in ("hour", "day"):
        moment = moment.replace(minute=0)
    if unit == "day":
        moment = moment.replace(hour=0)
    return moment


def window(name: str, now: datetime) -> Window:
    """The window `name` (an unknown name: the default) ending at `now`."""
    if name not in WINDOWS:
        name = DEFAULT_WINDOW
    label, unit, step, count = WINDOWS[name]
    since = truncated(now, unit) - (count - 1) * step
    return Window(name=name, label=label, unit=unit, step=step, since=since, until=now)
