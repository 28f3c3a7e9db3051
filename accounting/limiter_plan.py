"""What the service asks a limiter (Redis or in-process) to check or settle, and its answer.

The service builds plans (which buckets, run sets and quota apply, at what cost); the two
limiters only execute them, atomically, with the same semantics.
"""
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Bucket:
    """A leaky bucket holding at most `limit`, draining `limit` per minute; `cost` to add
    (admission; 0 only reads it) or the correction to apply (settlement)."""

    key: str
    limit: int
    cost: int


@dataclass(frozen=True)
class RunSet:
    """The run slots held at once in one scope (API key or tenant), at most `limit`."""

    key: str
    limit: int


@dataclass(frozen=True)
class AdmissionPlan:
    buckets: list[Bucket]
    run_sets: list[RunSet]
    quota_key: str
    budget: int          # monthly token budget; 0: none
    quota_seed: int      # the month's usage so far when the counter is missing; -1: unknown
    slot: str | None     # the run slot to take, if this request starts a run
    lease_ms: int        # a slot lapses after this long even if never released
    quota_ttl_ms: int


@dataclass(frozen=True)
class Verdict:
    """`ok`, `limited` (bucket `failed` is full: retry in `wait_ms`), `too_large` (the cost
    exceeds bucket `failed`'s limit), `runs` (a run set is full), `quota` (the budget is
    spent) or `seed` (the quota counter is missing: ask again with its value).
    `states` is (remaining, ms until empty) per bucket, for the response headers."""

    verdict: str
    failed: int
    wait_ms: int
    states: list[tuple[int, int]] = field(default_factory=list)


@dataclass(frozen=True)
class Settlement:
    """The end of a run: token corrections per bucket, the slot to release, usage to add."""

    buckets: list[Bucket]
    run_set_keys: list[str]
    quota_key: str
    used_tokens: int
    slot: str | None
