"""The limiter of the embedded mode (one process, no Redis): the Redis script's semantics
in Python under one lock."""
import math
import threading
import time

from .limiter_plan import AdmissionPlan, Settlement, Verdict


class MemoryLimiter:
    def __init__(self):
        self._lock = threading.Lock()
        self._buckets: dict[str, tuple[float, int]] = {}   # key -> (level, at ms)
        self._runs: dict[str, dict[str, int]] = {}         # key -> {slot: expiry ms}
        self._quota: dict[str, int] = {}

    def admit(self, plan: AdmissionPlan) -> Verdict:
        with self._lock:
            now = _now_ms()
            verdict, failed, wait = "ok", 0, 0
            if plan.budget > 0:
                used = self._quota.get(plan.quota_key)
                if used is None:
                    if plan.quota_seed < 0:
                        return Verdict("seed", 0, 0)
                    used = self._quota[plan.quota_key] = plan.quota_seed
                if used >= plan.budget:
                    verdict = "quota"
            levels = [self._level(b.key, b.limit, now) for b in plan.buckets]
            for index, (bucket, level) in enumerate(zip(plan.buckets, levels), start=1):
                if verdict != "ok":
                    break
                if bucket.cost > bucket.limit:
                    verdict, failed = "too_large", index
                elif bucket.cost > 0 and level + bucket.cost > bucket.limit:
                    verdict, failed = "limited", index
                    wait = math.ceil((level + bucket.cost - bucket.limit) * 60000 / bucket.limit)
            for index, run_set in enumerate(plan.run_sets, start=len(plan.buckets) + 1):
                slots = self._runs.setdefault(run_set.key, {})
                for slot, expiry in list(slots.items()):
                    if expiry <= now:
                        del slots[slot]
                if plan.slot and verdict == "ok" and len(slots) >= run_set.limit:
                    verdict, failed, wait = "runs", index, 1000
            states = []
            for bucket, level in zip(plan.buckets, levels):
                if verdict == "ok" and bucket.cost > 0:
                    level += bucket.cost
                    self._buckets[bucket.key] = (level, now)
                states.append((math.floor(bucket.limit - level),
                               math.ceil(level * 60000 / bucket.limit)))
            if verdict == "ok" and plan.slot:
                for run_set in plan.run_sets:
                    self._runs[run_set.key][plan.slot] = now + plan.lease_ms
            return Verdict(verdict, failed, wait, states)

    def settle(self, settlement: Settlement) -> None:
        with self._lock:
            now = _now_ms()
            for bucket in settlement.buckets:
                level = self._level(bucket.key, bucket.limit, now)
                self._buckets[bucket.key] = (max(0.0, level + bucket.cost), now)
            for key in settlement.run_set_keys:
                self._runs.get(key, {}).pop(settlement.slot, None)
            if settlement.used_tokens > 0 and settlement.quota_key in self._quota:
                self._quota[settlement.quota_key] += settlement.used_tokens

    def _level(self, key: str, limit: int, now: int) -> float:
        level, at = self._buckets.get(key, (0.0, now))
        return max(0.0, level - (now - at) * limit / 60000)


def _now_ms() -> int:
    return int(time.time() * 1000)
