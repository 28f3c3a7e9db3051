"""The limiter on Redis: each admission and each settlement is one Lua script call, so
concurrent requests on any number of web processes see one consistent state.

Requests and tokens per minute are leaky buckets (a level that drains `limit` per minute,
kept as a hash {level, at}); concurrent runs are sorted sets of run slots scored by their
lease expiry, so a slot whose worker died lapses on its own. Redis's clock is the clock.
"""

import redis

from responses_app.redis_client import DRIVER_INFO

from .limiter_plan import AdmissionPlan, Settlement, Verdict

# KEYS: the n buckets, the m run sets, the quota counter.
# ARGV: n, m, budget, quota_seed, slot, lease_ms, quota_ttl_ms, then (limit, cost) per bucket,
# then the limit of each run set.
ADMIT = """
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local n, m = tonumber(ARGV[1]), tonumber(ARGV[2])
local budget, seed = tonumber(ARGV[3]), tonumber(ARGV[4])
local slot, lease, quota_ttl = ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[7])
local verdict, failed, wait = 'ok', 0, 0
if budget > 0 then
  local quota = KEYS[n + m + 1]
  local used = redis.call('GET', quota)
  if not used then
    if seed < 0 then return {'seed', 0, 0} end
    redis.call('SET', quota, seed, 'PX', quota_ttl)
    used = seed
  end
  if tonumber(used) >= budget then verdict = 'quota' end
end
local levels = {}
for i = 1, n do
  local limit, cost = tonumber(ARGV[6 + 2 * i]), tonumber(ARGV[7 + 2 * i])
  local state = redis.call('HMGET', KEYS[i], 'level', 'at')
  local level = tonumber(state[1]) or 0
  local at = tonumber(state[2]) or now
  level = math.max(0, level - (now - at) * limit / 60000)
  levels[i] = level
  if cost > limit and verdict == 'ok' then
    verdict, failed = 'too_large', i
  elseif cost > 0 and level + cost > limit and verdict == 'ok' then
    verdict, failed = 'limited', i
    wait = math.ceil((level + cost - limit) * 60000 / limit)
  end
end
for j = 1, m do
  local key, limit = KEYS[n + j], tonumber(ARGV[7 + 2 * n + j])
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  if slot ~= '' and verdict == 'ok' and redis.call('ZCARD', key) >= limit then
    verdict, failed, wait = 'runs', n + j, 1000
  end
end
local reply = {verdict, failed, wait}
for i = 1, n do
  local limit, cost = tonumber(ARGV[6 + 2 * i]), tonumber(ARGV[7 + 2 * i])
  local level = levels[i]
  if verdict == 'ok' and cost > 0 then
    level = level + cost
    redis.call('HSET', KEYS[i], 'level', level, 'at', now)
    redis.call('PEXPIRE', KEYS[i], math.ceil(level * 60000 / limit) + 1000)
  end
  table.insert(reply, math.floor(limit - level))
  table.insert(reply, math.ceil(level * 60000 / limit))
end
if verdict == 'ok' and slot ~= '' then
  for j = 1, m do
    redis.call('ZADD', KEYS[n + j], now + lease, slot)
    redis.call('PEXPIRE', KEYS[n + j], lease)
  end
end
return reply
"""

# KEYS: the n token buckets, the m run sets, the quota counter.
# ARGV: n, m, used_tokens, slot, then (limit, delta) per bucket.
SETTLE = """
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local n, m = tonumber(ARGV[1]), tonumber(ARGV[2])
local used, slot = tonumber(ARGV[3]), ARGV[4]
for i = 1, n do
  local limit, delta = tonumber(ARGV[3 + 2 * i]), tonumber(ARGV[4 + 2 * i])
  local state = redis.call('HMGET', KEYS[i], 'level', 'at')
  local level = tonumber(state[1]) or 0
  local at = tonumber(state[2]) or now
  level = math.max(0, level - (now - at) * limit / 60000 + delta)
  redis.call('HSET', KEYS[i], 'level', level, 'at', now)
  redis.call('PEXPIRE', KEYS[i], math.ceil(level * 60000 / limit) + 1000)
end
for j = 1, m do
  redis.call('ZREM', KEYS[n + j], slot)
end
local quota = KEYS[n + m + 1]
if used > 0 and redis.call('EXISTS', quota) == 1 then
  redis.call('INCRBY', quota, used)
end
return 1
"""


class RedisLimiter:
    def __init__(self, url: str):
        self.client = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5,
                                           driver_info=DRIVER_INFO)
        self._admit = self.client.register_script(ADMIT)
        self._settle = self.client.register_script(SETTLE)

    def admit(self, plan: AdmissionPlan) -> Verdict:
        keys = [b.key for b in plan.buckets] + [r.key for r in plan.run_sets] + [plan.quota_key]
        args = [len(plan.buckets), len(plan.run_sets), plan.budget, plan.quota_seed,
                plan.slot or "", plan.lease_ms, plan.quota_ttl_ms]
        for bucket in plan.buckets:
            args += [bucket.limit, bucket.cost]
        args += [r.limit for r in plan.run_sets]
        verdict, failed, wait, *states = self._admit(keys=keys, args=args)
        return Verdict(verdict.decode(), int(failed), int(wait),
                       [(int(states[i]), int(states[i + 1])) for i in range(0, len(states), 2)])

    def settle(self, settlement: Settlement) -> None:
        keys = ([b.key for b in settlement.buckets] + list(settlement.run_set_keys)
                + [settlement.quota_key])
        args = [len(settlement.buckets), len(settlement.run_set_keys), settlement.used_tokens,
                settlement.slot or ""]
        for bucket in settlement.buckets:
            args += [bucket.limit, bucket.cost]
        self._settle(keys=keys, args=args)


def limiter_from_settings() -> RedisLimiter:
    """The deployment's limiter (see responses_app/backends.py)."""
    from django.conf import settings

    return RedisLimiter(settings.REDIS_URL)
