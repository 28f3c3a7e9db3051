"""A call's replica: the one function that picks the replica of a route an upstream call
goes to, holds the call's slot of the route's limit, and cools a failed replica down.

Every upstream call of the worker (responses, and any front door that streams a chat
completion through responses_app/worker/upstream.py) takes a `Lease` here. A route with
one URL and no limit needs no shared state: its lease is its URL, with no Redis round
trip. Otherwise the lease is taken from the deployment's store (pool_redis on Redis;
pool_memory when embedded) by the rule of replicas.choose: least in flight, a chain kept
on its replica, never a replica cooling down. The route's `max_concurrency` is the
deployment's: at the limit a call waits for a slot, polling with backoff (20 ms doubling
to 250 ms), until `wait` runs out (UpstreamBusy). A worker renews its leases every third
of UPSTREAM_LEASE_SECONDS, so the slots of a worker that died free up after at most that.
"""
import asyncio
import logging
import uuid
from dataclasses import dataclass
from functools import lru_cache

import redis
from django.conf import settings

from observability import metrics

from .replicas import HIT, NO_CHAIN, UNHEALTHY, Placement
from .routing import Route

log = logging.getLogger(__name__)

FIRST_POLL, LONGEST_POLL = 0.02, 0.25


class UpstreamBusy(Exception):
    """No slot of this upstream freed up in time."""


@dataclass(frozen=True)
class Lease:
    route_name: str
    url: str  # the replica's base URL
    lease_id: str | None = None  # None: nothing held (a route without shared state)


def needs_store(route: Route) -> bool:
    """Whether calls of `route` take a lease from the store (replicas, or a limit)."""
    return len(route.replicas) > 1 or route.max_concurrency > 0


@lru_cache(maxsize=1)
def replica_store():
    """The deployment's store of leases, cool-downs and chains."""
    if settings.EMBEDDED:
        from .pool_memory import MemoryReplicaStore

        return MemoryReplicaStore()
    from .pool_redis import RedisReplicaStore

    return RedisReplicaStore(settings.REDIS_URL)


async def take_replica(route: Route, placement: Placement, tried: list[str],
                       wait: float) -> Lease | None:
    """A lease on the replica for this call, `placement` told which one and how its chain's
    affinity went; None when every replica not `tried` is cooling down."""
    if not needs_store(route):
        placement.replica = route.base_url
        return Lease(route.name, route.base_url)
    store, lease_id = replica_store(), uuid.uuid4().hex
    chained = len(route.replicas) > 1
    deadline = asyncio.get_running_loop().time() + wait
    poll = FIRST_POLL
    while True:
        try:
            verdict = await store.acquire(
                route.name, route.replicas, [url in tried for url in route.replicas],
                placement.lookup if chained else (), placement.record if chained else (),
                lease_id, int(settings.UPSTREAM_LEASE_SECONDS * 1000), route.max_concurrency,
                settings.UPSTREAM_AFFINITY_MAX_EXCESS,
                int(settings.UPSTREAM_AFFINITY_TTL_SECONDS * 1000))
        except redis.RedisError as exc:  # the run goes on, unpooled, rather than fail
            log.warning("upstream %s: the replica pool is unreachable (%s); using %s",
                        route.name, exc, route.base_url)
            placement.replica = route.base_url
            return Lease(route.name, route.base_url)
        if verdict.verdict == "ok":
            url = route.replicas[verdict.choice.index]
            if chained and not tried:  # how the chain's affinity went, before any failover
                placement.outcome = verdict.choice.outcome
            placement.replica = url
            lease = Lease(route.name, url, lease_id)
            _held(lease)
            return lease
        if verdict.verdict == "down":
            placement.retry_after = verdict.retry_after
            return None
        left = deadline - asyncio.get_running_loop().time()
        if left <= 0:
            raise UpstreamBusy(f"The upstream '{route.name}' is at its limit of "
                               f"{route.max_concurrency} concurrent requests.")
        await asyncio.sleep(min(poll, left))
        poll = min(poll * 2, LONGEST_POLL)


def answered(route: Route, placement: Placement) -> None:
    """The call's replica answered: count how its chain's affinity went (a chain whose
    replica failed this call before its first byte is a miss: unhealthy)."""
    if placement.failovers and placement.outcome == HIT:
        placement.outcome = UNHEALTHY
    if len(route.replicas) > 1 and placement.outcome != NO_CHAIN:
        metrics.UPSTREAM_AFFINITY.labels(route.name, placement.outcome).inc()


async def release(lease: Lease) -> None:
    """Give the lease back, and wait until the store has it (the next call counts it out).
    Shielded: a run cancelled meanwhile still gives it back."""
    if lease.lease_id is None:
        return
    _leases_of_loop().pop(lease.lease_id, None)
    await asyncio.shield(_background(
        replica_store().release(lease.route_name, lease.url, lease.lease_id)))


def release_soon(lease: Lease) -> None:
    """Give the lease back without waiting (its renewal stops now; the store is told in
    the background): for a `finally` of a run being cancelled."""
    if lease.lease_id is None:
        return
    _leases_of_loop().pop(lease.lease_id, None)
    _background(replica_store().release(lease.route_name, lease.url, lease.lease_id))


async def cool_down(route: Route, url: str) -> None:
    """Skip the replica `url` for UPSTREAM_REPLICA_COOLDOWN_SECONDS (a route of one URL has
    nothing to skip to: never)."""
    if len(route.replicas) < 2:
        return
    metrics.UPSTREAM_FAILOVERS.labels(route.name).inc()
    try:
        await replica_store().cool_down(route.name, url,
                                        settings.UPSTREAM_REPLICA_COOLDOWN_SECONDS)
    except redis.RedisError as exc:
        log.warning("upstream %s: could not cool %s down: %s", route.name, url, exc)


def remember_soon(route: Route, keys: list[str], url: str | None) -> None:
    """Remember `url` as the replica of the chains `keys` (e.g. a response's output items,
    which a later request may reference: replicas.item_keys), in the background."""
    if len(route.replicas) > 1 and keys and url:
        _background(replica_store().remember(
            route.name, keys, url, int(settings.UPSTREAM_AFFINITY_TTL_SECONDS * 1000)))


# --- lease renewal and background store calls, per event loop ------------------------------
_loops: dict = {}  # event loop -> {"leases": {lease_id: Lease}, "renewer": Task, "tasks": set}


def _state() -> dict:
    loop = asyncio.get_running_loop()
    state = _loops.get(loop)
    if state is None:
        state = _loops[loop] = {"leases": {}, "renewer": None, "tasks": set()}
    return state


def _leases_of_loop() -> dict:
    return _state()["leases"]


def _held(lease: Lease) -> None:
    state = _state()
    state["leases"][lease.lease_id] = lease
    if state["renewer"] is None or state["renewer"].done():
        state["renewer"] = asyncio.get_running_loop().create_task(_renewing(state))


async def _renewing(state: dict) -> None:
    """Renew this loop's leases every third of their lease, while it holds any."""
    period = settings.UPSTREAM_LEASE_SECONDS / 3
    while state["leases"]:
        await asyncio.sleep(period)
        held = [(lease.route_name, lease.url, lease.lease_id)
                for lease in state["leases"].values()]
        if not held:
            return
        try:
            await replica_store().renew(held, int(settings.UPSTREAM_LEASE_SECONDS * 1000))
        except redis.RedisError as exc:
            log.warning("renewing %d upstream leases failed: %s", len(held), exc)


def _background(coroutine) -> asyncio.Task:
    tasks = _state()["tasks"]
    task = asyncio.get_running_loop().create_task(_logged(coroutine))
    tasks.add(task)
    task.add_done_callback(tasks.discard)
    return task


async def _logged(coroutine) -> None:
    try:
        await coroutine
    except redis.RedisError as exc:
        log.warning("upstream replica pool: %s", exc)
