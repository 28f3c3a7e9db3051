"""Which replica of a route serves a call: the choice, pure (no Django, no I/O).

A route names one model server or several replicas of it (its `replicas`, the base URL
first). A call goes to the healthy replica with the fewest calls in flight, ties broken by
a rotating start so equal replicas take turns; a continuation goes to the replica that
served its chain's last turn (its prefix cache is warm) while that replica is healthy and
holds at most `max_excess` calls more than the least loaded one.

The Redis pool (pool_redis.py) runs the same rule inside one Lua script, so that its
counts, its choice and its lease are one atomic step for every worker of a deployment;
the in-process pool (pool_memory.py, the embedded deployment) calls `choose` itself.
"""
from dataclasses import dataclass, field

# How a call's chain affinity went (the metric's `outcome` label):
NO_CHAIN = "none"  # a new chain (or one whose replica is forgotten): no affinity to keep
HIT = "hit"  # sent to the chain's replica
OVERLOADED = "overloaded"  # its replica held more than max_excess above the least loaded
UNHEALTHY = "unhealthy"  # its replica is cooling down after a failure (or failed this call)
GONE = "gone"  # its replica is no longer one of the route's
OUTCOMES = (NO_CHAIN, HIT, OVERLOADED, UNHEALTHY, GONE)


@dataclass
class Placement:
    """A call's chain and, once a replica took it, which one and how affinity went.

    `lookup`: the keys under which the chain's last replica may be remembered, best first
    (the previous response, the conversation, referenced items). `record`: the keys this
    call's replica is remembered under (its response, its conversation). The chat
    completions front door passes an empty Placement: spread and failover, no chain.
    """

    lookup: tuple[str, ...] = ()
    record: tuple[str, ...] = ()
    replica: str | None = None  # the base URL that took the call
    outcome: str = NO_CHAIN
    failovers: int = 0  # replicas that failed this call before its first byte
    retry_after: float = 0.0  # seconds until a replica is back, when all are cooling down

    @classmethod
    def for_run(cls, response_id: str, previous_response_id: str | None,
                conversation_id: str | None, item_ids: list[str] = ()) -> "Placement":
        """A response's placement: it continues its previous response, its conversation,
        or the newest of its input items that an earlier response output (8 looked up)."""
        lookup = []
        if previous_response_id:
            lookup.append(f"resp:{previous_response_id}")
        if conversation_id:
            lookup.append(f"conv:{conversation_id}")
        lookup += item_keys(list(item_ids)[::-1][:8])
        record = [f"resp:{response_id}"] + ([f"conv:{conversation_id}"] if conversation_id
                                            else [])
        return cls(lookup=tuple(lookup), record=tuple(record))


def item_keys(item_ids: list[str]) -> list[str]:
    """The chain keys of items (a later request may reference them)."""
    return [f"item:{item_id}" for item_id in item_ids]


@dataclass(frozen=True)
class Choice:
    index: int | None  # None: no replica can take it (all excluded or cooling down)
    outcome: str = NO_CHAIN


@dataclass
class ReplicaState:
    """What the choice reads: each replica's calls in flight and whether it is cooling down."""

    in_flight: list[int]
    down: list[bool]
    excluded: list[bool] = field(default_factory=list)  # failed this call already


def choose(state: ReplicaState, preferred: int | None, max_excess: int, start: int,
           chain_known: bool = False) -> Choice:
    """The replica for a call. `preferred`: the index of the chain's replica (None with
    `chain_known`: it is no longer the route's); `start`: the rotation (tie-break)."""
    n = len(state.in_flight)
    excluded = state.excluded or [False] * n
    candidates = [i for i in range(n) if not state.down[i] and not excluded[i]]
    outcome = GONE if chain_known and preferred is None else NO_CHAIN
    if not candidates:
        return Choice(None, outcome)
    least = min(state.in_flight[i] for i in candidates)
    chosen = candidates[0]
    for k in range(n):
        i = (start + k) % n
        if i in candidates and state.in_flight[i] == least:
            chosen = i
            break
    if preferred is not None:
        if preferred not in candidates:
            outcome = UNHEALTHY
        elif state.in_flight[preferred] - least > max_excess:
            outcome = OVERLOADED
        else:
            return Choice(preferred, HIT)
    return Choice(chosen, outcome)
