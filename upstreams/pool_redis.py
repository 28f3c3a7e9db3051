"""A route's replicas on Redis: one deployment-wide view of calls in flight, cool-downs and
chains, for every worker process on every host.

Each replica's calls in flight are a sorted set of leases scored by their expiry (Redis's
clock), so a lease whose worker died lapses on its own; a live worker renews its leases
(`renew`) every third of the lease. A replica cooling down is a key that expires with its
cool-down. A chain's replica is a key per chain (`resp:<id>`, `conv:<id>`, `item:<id>`)
that expires after UPSTREAM_AFFINITY_TTL_SECONDS.

`acquire` is one Lua script: it counts the leases, refuses above the route's limit, reads
the chain's replica, makes the choice of replicas.choose (the same rule, in Lua) and
takes the lease, atomically, so two workers never both take the last slot.
"""
import asyncio
from functools import lru_cache

from responses_app.redis_client import DRIVER_INFO

from .replicas import Choice

# KEYS: n lease sets, n cool-down keys, the rotation counter, m chain keys to look up,
#       k chain keys to record.
# ARGV: n, m, k, lease_ms, lease id, limit, max_excess, chain_ttl_ms, n excluded flags,
#       n replica URLs.
# Returns {verdict, index, outcome, retry_ms}: verdict ok | busy | down.
ACQUIRE = """
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local n, m, k = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local lease, id, limit = tonumber(ARGV[4]), ARGV[5], tonumber(ARGV[6])
local excess, ttl = tonumber(ARGV[7]), tonumber(ARGV[8])
local counts, total = {}, 0
for i = 1, n do
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now)
  counts[i] = redis.call('ZCARD', KEYS[i])
  total = total + counts[i]
end
if limit > 0 and total >= limit then return {'busy', 0, 'none', 0} end
local preferred, known = nil, false
for j = 1, m do
  local url = redis.call('GET', KEYS[2 * n + 1 + j])
  if url then
    known = true
    for i = 1, n do
      if ARGV[8 + n + i] == url then preferred = i end
    end
    break
  end
end
local candidate, least, retry = {}, nil, 0
for i = 1, n do
  local down = 0
  if n > 1 then down = redis.call('EXISTS', KEYS[n + i]) end
  if ARGV[8 + i] == '0' then
    if down == 0 then
      candidate[i] = true
      if least == nil or counts[i] < least then least = counts[i] end
    else
      local left = redis.call('PTTL', KEYS[n + i])
      if retry == 0 or left < retry then retry = left end
    end
  end
end
local outcome = 'none'
if known and preferred == nil then outcome = 'gone' end
if least == nil then return {'down', 0, outcome, retry} end
local start = redis.call('INCR', KEYS[2 * n + 1])
local chosen = nil
for s = 0, n - 1 do
  local i = (start + s) % n + 1
  if chosen == nil and candidate[i] and counts[i] == least then chosen = i end
end
if preferred ~= nil then
  if not candidate[preferred] then
    outcome = 'unhealthy'
  elseif counts[preferred] - least > excess then
    outcome = 'overloaded'
  else
    chosen, outcome = preferred, 'hit'
  end
end
redis.call('ZADD', KEYS[chosen], now + lease, id)
redis.call('PEXPIRE', KEYS[chosen], lease * 2)
for j = 1, k do
  redis.call('SET', KEYS[2 * n + 1 + m + j], ARGV[8 + n + chosen], 'PX', ttl)
end
return {'ok', chosen - 1, outcome, 0}
"""

# KEYS: the lease sets of the leases held; ARGV: lease_ms, then each lease's id.
RENEW = """
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local lease = tonumber(ARGV[1])
for i = 1, #KEYS do
  redis.call('ZADD', KEYS[i], 'XX', now + lease, ARGV[i + 1])
  redis.call('PEXPIRE', KEYS[i], lease * 2)
end
return #KEYS
"""


class Verdict:
    """`acquire`'s answer: a choice (index None: busy or none healthy) and for how long
    every replica left is cooling down (seconds; 0 if not)."""

    def __init__(self, verdict: str, choice: Choice, retry_after: float):
        self.verdict, self.choice, self.retry_after = verdict, choice, retry_after


class RedisReplicaStore:
    def __init__(self, url: str):
        self.url = url

    def client(self):
        return _client_for(asyncio.get_running_loop(), self.url)[0]

    def script(self, name: str):
        """The loop's client's registered script (EVALSHA; sent whole once, if unknown)."""
        return _client_for(asyncio.get_running_loop(), self.url)[1][name]

    async def acquire(self, route_name: str, replicas: tuple[str, ...], excluded: list[bool],
                      lookup: tuple[str, ...], record: tuple[str, ...], lease_id: str,
                      lease_ms: int, limit: int, max_excess: int, chain_ttl_ms: int) -> Verdict:
        n = len(replicas)
        keys = ([lease_key(route_name, url) for url in replicas]
                + [down_key(route_name, url) for url in replicas]
                + [f"gw:up:{route_name}:rotation"]
                + [chain_key(route_name, key) for key in lookup]
                + [chain_key(route_name, key) for key in record])
        args = [n, len(lookup), len(record), lease_ms, lease_id, limit, max_excess,
                chain_ttl_ms, *("1" if flag else "0" for flag in excluded), *replicas]
        verdict, index, outcome, retry_ms = await self.script("acquire")(keys=keys, args=args)
        verdict = verdict.decode()
        return Verdict(verdict, Choice(int(index) if verdict == "ok" else None,
                                       outcome.decode()), int(retry_ms) / 1000)

    async def release(self, route_name: str, url: str, lease_id: str) -> None:
        await self.client().zrem(lease_key(route_name, url), lease_id)

    async def renew(self, held: list[tuple[str, str, str]], lease_ms: int) -> None:
        """Extend the leases `held` ((route, url, lease id) each)."""
        keys = [lease_key(route, url) for route, url, _ in held]
        await self.script("renew")(keys=keys, args=[lease_ms,
                                                    *(lease_id for _, _, lease_id in held)])

    async def cool_down(self, route_name: str, url: str, seconds: float) -> None:
        await self.client().set(down_key(route_name, url), 1, px=max(1, int(seconds * 1000)))

    async def remember(self, route_name: str, keys: list[str], url: str, ttl_ms: int) -> None:
        async with self.client().pipeline(transaction=False) as pipe:
            for key in keys:
                pipe.set(chain_key(route_name, key), url, px=ttl_ms)
            await pipe.execute()


def lease_key(route_name: str, url: str) -> str:
    return f"gw:up:{route_name}:leases:{url}"


def down_key(route_name: str, url: str) -> str:
    return f"gw:up:{route_name}:down:{url}"


def chain_key(route_name: str, key: str) -> str:
    return f"gw:up:{route_name}:chain:{key}"


@lru_cache(maxsize=None)
def _client_for(loop, url: str):
    import redis.asyncio as aioredis

    pool = aioredis.BlockingConnectionPool.from_url(url, max_connections=32, timeout=20,
                                                    socket_connect_timeout=5,
                                                    driver_info=DRIVER_INFO)
    client = aioredis.Redis(connection_pool=pool)
    return client, {"acquire": client.register_script(ACQUIRE),
                    "renew": client.register_script(RENEW)}
