"""What travels on the bus: entries holding a run of numbered events.

An entry holds the events `first..last` (sequence numbers), each the JSON bytes of its
object (translation.numbering; framed for a wire only by the front that sends it), whether
the terminal event is among them (`end`), or, instead of events, the error that ended the
run before it started (`error`: the HTTP status and OpenAI error body to answer with), or
the bus's failure under a reader (`bus_failure_entry`).
`at` is when the bus stored the entry (Unix seconds), for the admin's event view.
"""
import time
from dataclasses import dataclass

from ..errors import APIError
from ..translation.numbering import EventStamper


class StreamFenced(Exception):
    """Another writer owns this response's event log: this run must stop writing."""


@dataclass
class Entry:
    first: int
    last: int
    events: list[bytes]
    end: bool = False
    error: dict | None = None
    at: float | None = None

    def after(self, sequence_number: int) -> "Entry | None":
        """This entry without the events numbered `sequence_number` or lower."""
        if self.error is not None or self.first > sequence_number:
            return self
        if self.last <= sequence_number:
            return None
        events = self.events[sequence_number - self.first + 1:]
        return Entry(sequence_number + 1, self.last, events, self.end, at=self.at)

    def merged(self, later: "Entry") -> "Entry":
        return Entry(self.first, later.last, self.events + later.events, later.end)


@dataclass
class RetainedLog:
    """What the bus still holds of one response's events, read whole (the admin's view)."""

    entries: list[Entry]
    expires_in: float | None  # seconds until the bus drops the log; None if not scheduled


def stamped_entry(stamper: EventStamper, events: list[dict], end: bool = False) -> Entry:
    """A response's next `events`, numbered by its `stamper`, as one entry (`end`: the
    terminal event is among them)."""
    first = stamper.next_sequence_number
    stamped = stamper.stamp(events)
    return Entry(first, stamper.next_sequence_number - 1, stamped, end)


def error_entry(status: int, body: dict, headers: dict | None = None) -> Entry:
    """The entry that answers the request with an HTTP error instead of a stream: the
    error's status, OpenAI body and headers (errors.APIError.of_body reads it back)."""
    return Entry(first=-1, last=-1, events=[], end=True,
                 error={"status": status, "body": body, "headers": headers or {}})


def failure_entry(error: APIError) -> Entry:
    """The error entry of `error`."""
    return error_entry(error.status, error.body, error.headers)


def bus_failure_entry(error: APIError) -> Entry:
    """The error entry a reader gets when the bus fails under it: in no log, it stops the
    reader's stream without its end (the run goes on); told apart from a run's own error
    entry by `is_bus_failure`."""
    entry = failure_entry(error)
    entry.error["bus"] = True
    return entry


def is_bus_failure(entry: Entry) -> bool:
    """Whether the error entry `entry` is the bus's failure, not the run's."""
    return entry.error.get("bus", False)


def failure_of(entry: Entry) -> APIError:
    """The error an error entry carries."""
    error = entry.error
    return APIError.of_body(error["status"], error["body"], error.get("headers"))


KEEPALIVE = object()


def now_ms() -> int:
    """The write time stamped on entries (Unix milliseconds)."""
    return int(time.time() * 1000)
