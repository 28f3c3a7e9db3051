"""A route's replicas in this process: the embedded deployment's pool (one process is the
whole deployment, so its counts are the deployment's). The same interface and rule as
pool_redis.RedisReplicaStore, on dictionaries; leases need no expiry (they die with the
process), chains are forgotten after their TTL or beyond MAX_CHAINS (oldest first).
"""
import threading
import time
from collections import OrderedDict

from .pool_redis import Verdict
from .replicas import Choice, ReplicaState, choose

MAX_CHAINS = 100_000


class MemoryReplicaStore:
    def __init__(self):
        self.leases: dict[tuple[str, str], set[str]] = {}
        self.down_until: dict[tuple[str, str], float] = {}
        self.rotation: dict[str, int] = {}
        self.chains: OrderedDict[tuple[str, str], tuple[str, float]] = OrderedDict()
        self.lock = threading.Lock()  # the embedded worker may run loops on several threads

    async def acquire(self, route_name: str, replicas: tuple[str, ...], excluded: list[bool],
                      lookup: tuple[str, ...], record: tuple[str, ...], lease_id: str,
                      lease_ms: int, limit: int, max_excess: int, chain_ttl_ms: int) -> Verdict:
        with self.lock:
            return self._acquire(route_name, replicas, excluded, lookup, record, lease_id,
                                 limit, max_excess, chain_ttl_ms)

    def _acquire(self, route_name, replicas, excluded, lookup, record, lease_id, limit,
                 max_excess, chain_ttl_ms) -> Verdict:
        now = time.monotonic()
        counts = [len(self.leases.get((route_name, url), ())) for url in replicas]
        if limit > 0 and sum(counts) >= limit:
            return Verdict("busy", Choice(None), 0)
        down = [len(replicas) > 1 and self.down_until.get((route_name, url), 0) > now
                for url in replicas]
        known, preferred = self._chain(route_name, lookup, replicas, now)
        rotation = self.rotation[route_name] = self.rotation.get(route_name, 0) + 1
        choice = choose(ReplicaState(counts, down, list(excluded)), preferred, max_excess,
                        rotation, chain_known=known)
        if choice.index is None:
            left = [self.down_until[(route_name, url)] - now
                    for url, d, x in zip(replicas, down, excluded) if d and not x]
            return Verdict("down", choice, min(left, default=0))
        url = replicas[choice.index]
        self.leases.setdefault((route_name, url), set()).add(lease_id)
        self._remember(route_name, list(record), url, chain_ttl_ms)
        return Verdict("ok", choice, 0)

    def _chain(self, route_name, lookup, replicas, now) -> tuple[bool, int | None]:
        for key in lookup:
            entry = self.chains.get((route_name, key))
            if entry is not None and entry[1] > now:
                url = entry[0]
                return True, replicas.index(url) if url in replicas else None
        return False, None

    async def release(self, route_name: str, url: str, lease_id: str) -> None:
        with self.lock:
            self.leases.get((route_name, url), set()).discard(lease_id)

    async def renew(self, held, lease_ms: int) -> None:
        return None

    async def cool_down(self, route_name: str, url: str, seconds: float) -> None:
        self.down_until[(route_name, url)] = time.monotonic() + seconds

    async def remember(self, route_name: str, keys: list[str], url: str, ttl_ms: int) -> None:
        with self.lock:
            self._remember(route_name, keys, url, ttl_ms)

    def _remember(self, route_name: str, keys: list[str], url: str, ttl_ms: int) -> None:
        expires = time.monotonic() + ttl_ms / 1000
        for key in keys:
            self.chains[(route_name, key)] = (url, expires)
            self.chains.move_to_end((route_name, key))
        while len(self.chains) > MAX_CHAINS:
            self.chains.popitem(last=False)
