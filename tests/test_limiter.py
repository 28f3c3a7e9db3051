"""The two limiters (the Redis script and its in-process twin) answer the same plans the
same way, and the Redis one holds under concurrency: exactly `limit` admissions pass."""
import secrets
from concurrent.futures import ThreadPoolExecutor

import pytest
import redis

from accounting.limiter_memory import MemoryLimiter
from accounting.limiter_plan import AdmissionPlan, Bucket, RunSet, Settlement
from accounting.limiter_redis import RedisLimiter
from accounting.ratelimit import format_duration
from tests.servers import REDIS_BASE_URL, SPARE_REDIS_DB

REDIS_URL = f"{REDIS_BASE_URL}/{SPARE_REDIS_DB}"
HOUR_MS = 3600 * 1000


@pytest.fixture(params=["memory", "redis"])
def limiter(request):
    if request.param == "memory":
        return MemoryLimiter()
    redis.Redis.from_url(REDIS_URL).flushdb()
    return RedisLimiter(REDIS_URL)


def plan(buckets=(), run_sets=(), slot=None, budget=0, seed=-1, quota_key="q"):
    return AdmissionPlan(buckets=list(buckets), run_sets=list(run_sets), quota_key=quota_key,
                         budget=budget, quota_seed=seed, slot=slot, lease_ms=HOUR_MS,
                         quota_ttl_ms=HOUR_MS)


def test_a_bucket_admits_up_to_its_limit_and_says_when_to_retry(limiter):
    # 60 per minute drains one unit per second: less than the test takes to run
    bucket = Bucket("k:req", 60, 20)
    verdicts = [limiter.admit(plan([bucket])) for _ in range(4)]
    assert [v.verdict for v in verdicts] == ["ok", "ok", "ok", "limited"]
    assert [v.states[0][0] for v in verdicts[:3]] == [40, 20, 0]
    assert verdicts[3].failed == 1
    assert 19_000 < verdicts[3].wait_ms <= 20_000  # 20 units at one per second
    assert verdicts[0].states[0][1] == 20_000       # empty again in 20 s


def test_a_cost_above_the_limit_is_too_large_and_a_zero_cost_only_reads(limiter):
    assert limiter.admit(plan([Bucket("k:tok", 100, 101)])).verdict == "too_large"
    assert limiter.admit(plan([Bucket("k:tok", 100, 100)])).verdict == "ok"
    peek = limiter.admit(plan([Bucket("k:tok", 100, 0)]))
    assert (peek.verdict, peek.states[0][0]) == ("ok", 0)


def test_a_refusal_consumes_nothing(limiter):
    requests, tokens = Bucket("r", 60, 1), Bucket("t", 60, 50)
    assert limiter.admit(plan([requests, tokens])).verdict == "ok"
    refused = limiter.admit(plan([requests, tokens]))
    assert (refused.verdict, refused.failed) == ("limited", 2)
    assert refused.states[0][0] == 59  # the refused request was not counted


def test_run_slots_are_limited_and_released_by_settlement(limiter):
    runs = [RunSet("k:runs", 2), RunSet("t:runs", 5)]
    verdicts = [limiter.admit(plan(run_sets=runs, slot=f"s{i}")).verdict for i in range(3)]
    assert verdicts == ["ok", "ok", "runs"]
    limiter.settle(Settlement([], ["k:runs", "t:runs"], "q", 0, "s0"))
    assert limiter.admit(plan(run_sets=runs, slot="s3")).verdict == "ok"
    # requests that start no run are never refused for runs
    assert limiter.admit(plan(run_sets=runs)).verdict == "ok"


def test_settlement_replaces_the_estimate_with_the_real_usage(limiter):
    tokens = Bucket("t", 600, 400)
    assert limiter.admit(plan([tokens])).verdict == "ok"
    assert limiter.admit(plan([tokens])).verdict == "limited"
    limiter.settle(Settlement([Bucket("t", 600, 50 - 400)], [], "q", 50, None))
    assert limiter.admit(plan([tokens])).verdict == "ok"


def test_the_quota_is_seeded_once_then_counted_by_settlements(limiter):
    assert limiter.admit(plan(budget=100)).verdict == "seed"
    assert limiter.admit(plan(budget=100, seed=60)).verdict == "ok"
    assert limiter.admit(plan(budget=100)).verdict == "ok"  # seeded: no second seed
    limiter.settle(Settlement([], [], "q", 40, None))
    assert limiter.admit(plan(budget=100)).verdict == "quota"
    assert limiter.admit(plan(budget=101)).verdict == "ok"


def test_the_redis_script_is_atomic_under_concurrency():
    redis.Redis.from_url(REDIS_URL).flushdb()
    limiter = RedisLimiter(REDIS_URL)
    bucket, runs = Bucket("conc:req", 6000, 100), [RunSet("conc:runs", 7)]

    def admit(_):
        return limiter.admit(plan([bucket], runs, slot=secrets.token_hex(4))).verdict

    with ThreadPoolExecutor(max_workers=16) as pool:
        verdicts = list(pool.map(admit, range(64)))
    assert verdicts.count("ok") == 7
    assert verdicts.count("runs") == 57


@pytest.mark.parametrize("ms, text", [(0, "0ms"), (120, "120ms"), (1000, "1s"), (1500, "1.5s"),
                                      (60_000, "1m0s"), (361_250, "6m1.25s")])
def test_durations_are_written_as_openai_writes_them(ms, text):
    assert format_duration(ms) == text
