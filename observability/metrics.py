"""Prometheus metrics of the web and worker processes, and their exposition at /metrics.

Web and workers are separate processes: with PROMETHEUS_MULTIPROC_DIR set (a directory
shared by the web and worker processes of one host, emptied before they start) every
process writes its samples there and /metrics adds them up (prometheus_client's
multiprocess mode); the files are named by host and pid, since the containers of one
deployment share the directory and each numbers its processes from 1. Without it, /metrics shows the serving process alone, which is all of
it in the embedded mode. Queue depth and live workers are read from Redis at scrape time.
"""
import logging
import os
import socket

from prometheus_client import (
    CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, Counter, Gauge, Histogram,
    generate_latest,
)
from prometheus_client import values
from prometheus_client.core import GaugeMetricFamily

log = logging.getLogger(__name__)


def _process_identifier() -> str:
    """This process's name in the shared directory: `<host>-<pid>`."""
    return f"{socket.gethostname()}-{os.getpid()}"


if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):  # before the metrics below are made
    values.ValueClass = values.MultiProcessValue(process_identifier=_process_identifier)

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
RUN_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)

HTTP_REQUESTS = Counter("gateway_http_requests", "HTTP requests answered, by route and status",
                        ["route", "method", "status"])
ACTIVE_STREAMS = Gauge("gateway_active_streams", "SSE streams being relayed to clients",
                       multiprocess_mode="livesum")
EVENTS_RELAYED = Counter("gateway_events_relayed", "Stream events relayed to clients")
RUN_DURATION = Histogram("gateway_run_duration_seconds", "Runs from claim to end, by outcome",
                         ["status"], buckets=RUN_BUCKETS)
TIME_TO_FIRST_DELTA = Histogram("gateway_time_to_first_delta_seconds",
                                "From claiming a run to publishing its first delta",
                                buckets=LATENCY_BUCKETS)
UPSTREAM_ERRORS = Counter("gateway_upstream_errors", "Runs the upstream failed, by error code",
                          ["code"])
UPSTREAM_AFFINITY = Counter(
    "gateway_upstream_affinity", "Continuations of a chain on a route of several replicas, by "
    "outcome: hit (sent to the chain's replica), overloaded, unhealthy, gone (sent elsewhere)",
    ["route", "outcome"])
UPSTREAM_FAILOVERS = Counter("gateway_upstream_failovers",
                             "Replicas that failed a call before its first byte (cooled down)",
                             ["route"])
TOOL_CALLS = Counter("gateway_tool_calls", "Tool calls in finished responses, by item type",
                     ["type"])
HISTORY_REPAIRS = Counter("gateway_history_repairs",
                          "Repairs of a request's history before the upstream call, by kind",
                          ["repair"])
HOSTED_TOOLS_DROPPED = Counter("gateway_hosted_tools_dropped",
                               "Hosted tools dropped from requests (no backend), by tool type",
                               ["type"])
HOSTED_TOOL_CALLS = Counter("gateway_hosted_tool_calls",
                            "Hosted tool calls the gateway ran, by tool and outcome",
                            ["tool", "status"])
RATE_LIMITED = Counter("gateway_rate_limited", "Requests refused by limits or quotas",
                       ["code"])


class _ScrapeTimeCollector:
    """Gauges read when scraped: the run queue's depth and the live workers."""

    def collect(self):
        from responses_app import backends
        # runs up a floor, read when scraped: the gauge of the run queue's depth
        from responses_app.delivery.jobs import RUN_QUEUE_KEY

        from .redis_client import probe_client

        if backends.in_process():
            return
        try:
            client = probe_client()
            depth = client.llen(RUN_QUEUE_KEY)
            workers = len(backends.service("heartbeats").live_workers(client))
        except Exception as exc:  # a scrape must not fail because Redis did
            log.warning("metrics: Redis unavailable: %s", exc)
            return
        yield GaugeMetricFamily("gateway_queue_depth", "Runs waiting for a worker", value=depth)
        yield GaugeMetricFamily("gateway_workers_alive", "Workers with a fresh heartbeat",
                                value=workers)


_scrape_time = CollectorRegistry(auto_describe=False)
_scrape_time.register(_ScrapeTimeCollector())


def exposition() -> tuple[bytes, str]:
    """The text exposition of every metric, and its content type."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    else:
        registry = REGISTRY
    return generate_latest(registry) + generate_latest(_scrape_time), CONTENT_TYPE_LATEST


def forget_dead_processes() -> None:
    """Drop the live-gauge files of this host's processes that are gone (e.g. a restarted
    web); another host's (container's) processes are its own to forget."""
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if not directory or not os.path.isdir(directory):
        return
    from prometheus_client import multiprocess

    host = socket.gethostname()
    for name in os.listdir(directory):
        identifier = name.rsplit("_", 1)[-1][:-3]
        owner, _, pid = identifier.rpartition("-")
        if name.startswith("gauge_live") and name.endswith(".db") and owner == host \
                and pid.isdigit() and not _alive(int(pid)):
            multiprocess.mark_process_dead(identifier, directory)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
