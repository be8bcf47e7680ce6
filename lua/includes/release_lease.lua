-- release_lease(topic, eid): free the limit lease of a delivery (a no-op when it has none) and
-- wake one waiting worker. Limits (docs/limits.md) keep per-topic keys next to the topic stream,
-- sharing its hash tag:
--   PREFIX..'limits'            hash topic -> 'count|per_ms|concurrency' (empty part: no limit)
--   PREFIX..'bucket:'..topic    hash tokens, ts (ms): the token bucket of a rate limit
--   PREFIX..'leases:'..topic    zset stream entry id -> lease expiry (ms): one per running job
--   PREFIX..'limitwake:'..topic list: one element per freed lease, for waiting workers (BLPOP)
-- check_lease_keys(topic) refuses a wrong type of the last two (call it before a write).
-- @include keys
local function leases_key(topic) return PREFIX .. 'leases:' .. topic end
local function limitwake_key(topic) return PREFIX .. 'limitwake:' .. topic end
local function check_lease_keys(topic)
  refuse_wrong_type(leases_key(topic), 'zset'); refuse_wrong_type(limitwake_key(topic), 'list')
end
local function release_lease(topic, eid)
  if redis.call('ZREM', leases_key(topic), eid) == 1 then
    local wk = limitwake_key(topic)
    redis.call('LPUSH', wk, '1')
    redis.call('LTRIM', wk, 0, 63)
  end
end
