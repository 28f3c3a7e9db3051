"""How a run's streaming phase ended (`Ending`), the value the streaming phase
(run_streaming.py) hands the storing phase (run.py), the abandon path and the crash net."""
from dataclasses import dataclass, field

from ..errors import CRASHED
from .upstream import UpstreamRejected


@dataclass
class Ending:
    """How the streaming phase ended: `finished` (with its `closing` events, the terminal
    one last: completed, incomplete, failed or cancelled), `rejected` before it started
    (the client gets `rejected` as an HTTP error), `fenced` or `unclaimed` (it owns
    nothing more: nothing more is written), or `abandoned` (its claim met a database
    outage: its client gets a 503, run_abandon.py)."""

    kind: str
    closing: list = field(default_factory=list)
    rejected: UpstreamRejected | None = None


def crash_before_anything() -> Ending:
    """The end of a run that crashed with nothing of it out: its client is answered the
    bare 500 (the crash path's), nothing stored."""
    return Ending("rejected", rejected=UpstreamRejected(CRASHED, status=500,
                                                        code="server_error"))
