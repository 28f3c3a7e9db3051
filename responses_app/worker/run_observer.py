"""After one run: the settlement of its admission (real tokens for the estimate, its slot
released: lifecycle.settle) and its metrics, then its log line (written once the run's end
is published: formatting and writing it is not on the client's path).

The usage itself is written by the lifecycle, with the response. A run that ends without
reaching the storing phase (its safety net answered its crash: run_crash.py) is settled on
the way out (run.py); a run that was ended in its place (fenced off, given up by the
watchdog, or failed in place by its safety net) is not: whoever ended it did.
"""
import logging
import time

from observability import metrics

from .. import lifecycle
from ..translation.client_tools import OUTPUT_TYPES

log = logging.getLogger(__name__)

TOOL_CALL_TYPES = ("function_call", "custom_tool_call", "mcp_call", "web_search_call",
                   "file_search_call", *OUTPUT_TYPES)


class ObservedRun:
    def __init__(self, job):
        self.job = job
        self.started = time.monotonic()
        self.ending = None  # how its streaming phase ended (run_streaming.Ending)
        self.first_delta_at: float | None = None
        self.settled = False
        self.line: dict | None = None  # the log line's fields, until it is written

    def ended(self) -> None:
        """The run's result is stored: settle its admission and measure it (before the
        terminal event is published, so a follow-up request finds its slot free and a
        scrape after it sees the run); its log line waits for `log()`."""
        if self.settled:
            return
        self.settled = True
        status, resource, error_code = self.outcome()
        usage = resource.get("usage") or {}
        used = (usage.get("input_tokens") or 0) + (usage.get("output_tokens") or 0)
        if status != "fenced":  # else whoever ended the run in its place settled it
            lifecycle.settle(self.job.tenant_id, self.job.context, used)
        duration = time.monotonic() - self.started
        _measure(self, status, resource, error_code, duration)
        self.line = {"response_id": self.job.id, "status": status, "model": self.job.model,
                     "duration_ms": round(duration * 1000, 1),
                     "input_tokens": usage.get("input_tokens"),
                     "output_tokens": usage.get("output_tokens"),
                     "upstream_replica": getattr(self.job, "upstream_replica", None)}

    def log(self) -> None:
        """Write the run's log line, once, if it ended (`ended()`)."""
        line, self.line = self.line, None
        if line is not None:
            log.info("run %s %s", line["response_id"], line["status"], extra=line)

    def outcome(self) -> tuple[str, dict, str | None]:
        """(status label, final response object or {}, upstream error code or None)."""
        ending = self.ending
        if ending is None:
            return "crashed", {}, None
        if ending.kind in ("fenced", "abandoned"):
            return ending.kind, {}, None
        if ending.kind == "rejected":
            return "rejected", {}, ending.rejected.body["error"].get("code")
        resource = self.job.resource or {}
        error = resource.get("error") or {}
        return resource.get("status", "unknown"), resource, error.get("code")


def _measure(run: ObservedRun, status: str, resource: dict, error_code: str | None,
             duration: float) -> None:
    metrics.RUN_DURATION.labels(status).observe(duration)
    if run.first_delta_at is not None:
        metrics.TIME_TO_FIRST_DELTA.observe(run.first_delta_at - run.started)
    if error_code is not None:
        metrics.UPSTREAM_ERRORS.labels(error_code).inc()
    for item_type in TOOL_CALL_TYPES:
        calls = sum(1 for item in resource.get("output") or () if item.get("type") == item_type)
        if calls:
            metrics.TOOL_CALLS.labels(item_type).inc(calls)
