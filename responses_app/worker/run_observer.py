"""After one run: when its result is stored, the settlement of its admission (real tokens
for the estimate, its slot released), its metrics and a log line.

The usage itself is written by the result store, with the response. A run that ends
without reaching the store path (fenced, crashed) is settled on the way out (run.py).
"""
import logging
import time

from accounting import ratelimit
from observability import metrics

log = logging.getLogger(__name__)

TOOL_CALL_TYPES = ("function_call", "mcp_call")


class ObservedRun:
    def __init__(self, job):
        self.job = job
        self.started = time.monotonic()
        self.generated = None  # what the run's streaming part left (run.Generated)
        self.settled = False

    def ended(self) -> None:
        """The run's result is stored: settle its admission and record it (before the
        terminal event is published, so a follow-up request finds its slot free and a
        scrape after it sees the run)."""
        if self.settled:
            return
        self.settled = True
        status, resource, error_code = self.outcome()
        usage = resource.get("usage") or {}
        used = (usage.get("input_tokens") or 0) + (usage.get("output_tokens") or 0)
        ratelimit.settle(self.job.tenant_id, self.job.context, used)
        _observe(self, status, resource, error_code)

    def outcome(self) -> tuple[str, dict, str | None]:
        """(status label, final response object or {}, upstream error code or None)."""
        generated = self.generated
        if generated is None:
            return "crashed", {}, None
        if generated.fenced:
            return "fenced", {}, None
        if generated.rejected is not None:
            return "rejected", {}, generated.rejected.body["error"].get("code")
        resource = generated.resource or {}
        error = resource.get("error") or {}
        return resource.get("status", "unknown"), resource, error.get("code")


def _observe(run: ObservedRun, status: str, resource: dict, error_code: str | None) -> None:
    job = run.job
    duration = time.monotonic() - run.started
    usage = resource.get("usage") or {}
    metrics.RUN_DURATION.labels(status).observe(duration)
    first_delta_at = getattr(run.generated, "first_delta_at", None)
    if first_delta_at is not None:
        metrics.TIME_TO_FIRST_DELTA.observe(first_delta_at - run.started)
    if error_code is not None:
        metrics.UPSTREAM_ERRORS.labels(error_code).inc()
    for item_type in TOOL_CALL_TYPES:
        calls = sum(1 for item in resource.get("output") or () if item.get("type") == item_type)
        if calls:
            metrics.TOOL_CALLS.labels(item_type).inc(calls)
    log.info("run %s %s", job.response_id, status, extra={
        "response_id": job.response_id, "status": status, "model": job.model,
        "duration_ms": round(duration * 1000, 1), "input_tokens": usage.get("input_tokens"),
        "output_tokens": usage.get("output_tokens")})
