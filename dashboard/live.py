"""The dashboard's "now": runs in flight and queued, workers alive, and per upstream route
its runs in flight and its error rate over the last RECENT minutes.

Runs in flight and queued are the responses in those states (the `responses_not_completed`
index); the run queue's depth and the live workers are read from Redis (heartbeats), as
/metrics and /readyz read them. A route's numbers add up those of the models it serves now
(upstreams.routing): a route changed since counts its recent responses under the new table.
"""
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import Count, Q

from observability.redis_client import probe_client
from responses_app import backends
from responses_app.delivery.jobs import RUN_QUEUE_KEY
from responses_app.models import TERMINAL_STATUSES, ResponseStatus, StoredResponse
from upstreams.routing import route_table

RECENT = timedelta(minutes=15)


@dataclass
class RouteNow:
    name: str
    serves: str  # its model pattern, or "every other model"
    in_flight: int = 0
    recent: int = 0  # ended in the last RECENT (created then)
    recent_failed: int = 0

    @property
    def error_rate(self) -> float | None:
        """Failed / ended in the last RECENT, in percent (None: none ended)."""
        return round(100 * self.recent_failed / self.recent, 1) if self.recent else None


@dataclass
class Now:
    in_flight: int
    queued: int  # responses queued (their rows)
    run_queue: int | None  # messages waiting in the run queue; None: embedded or unknown
    workers: int | None  # live worker heartbeats; None: unknown (Redis unavailable)
    workers_note: str
    routes: list[RouteNow] = field(default_factory=list)


def _redis_state() -> tuple[int | None, int | None, str]:
    if backends.in_process():
        return None, 1, "in-process (embedded mode)"
    try:
        client = probe_client()
        depth = client.llen(RUN_QUEUE_KEY)
        workers = len(backends.service("heartbeats").live_workers(client))
    except Exception as exc:  # the page still answers when Redis does not
        return None, None, f"unknown: Redis is unavailable ({type(exc).__name__})"
    return depth, workers, "with a fresh heartbeat"


def now_state(now: datetime, tenant_id: int | None = None) -> Now:
    """The deployment now (runs of `tenant_id` alone when given; workers are shared)."""
    rows = StoredResponse.objects.all()
    if tenant_id is not None:
        rows = rows.filter(tenant_id=tenant_id)
    running = dict(rows.filter(status=ResponseStatus.IN_PROGRESS).values_list("model")
                   .annotate(n=Count("status")).order_by())
    queued = rows.filter(status=ResponseStatus.QUEUED).count()
    recent = rows.filter(created_at__gte=now - RECENT).values_list("model").annotate(
        ended=Count("status", filter=Q(status__in=TERMINAL_STATUSES)),
        failed=Count("status", filter=Q(status=ResponseStatus.FAILED))).order_by()
    table = route_table()
    routes = {route.name: RouteNow(route.name, route.pattern) for route in table.routes()}
    routes[table.default.name] = RouteNow(table.default.name, "every other model")
    for model, n in running.items():
        routes[table.route_for(model).name].in_flight += n
    for model, ended, failed in recent:
        route = routes[table.route_for(model).name]
        route.recent += ended
        route.recent_failed += failed
    depth, workers, note = _redis_state()
    return Now(in_flight=sum(running.values()), queued=queued, run_queue=depth,
               workers=workers, workers_note=note, routes=list(routes.values()))
