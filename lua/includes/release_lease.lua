-- release_lease(topic, eid): free the limit lease of a delivery (a no-op when it has none) and
-- wake one waiting worker. Limits (docs/limits.md) keep per-topic keys next to the topic stream,
-- sharing its hash tag:
--   PREFIX..'limits'            hash topic -> 'count|per_ms|concurrency' (empty part: no limit)
--   PREFIX..'bucket:'..topic    hash tokens, ts (ms): the token bucket of a rate limit
--   PREFIX..'leases:'..topic    zset stream entry id -> lease expiry (ms): one per running job
--   PREFIX..'limitwake:'..topic list: one element per freed lease, for waiting workers (BLPOP)
-- check_lease_keys(topic) refuses a wrong type of the last two (call it before a write) and
-- remembers whether the topic has leases at all: one TYPE per topic and call, and nothing
-- more for a topic without a concurrency limit (its settle path stays as it was).
-- check_settle_keys(topic): the same, and the topic's stream and dead-letter stream: every key a
-- script that settles or hands back a delivery of the topic may write.
-- @include keys
local function leases_key(topic) return PREFIX .. 'leases:' .. topic end
local function limitwake_key(topic) return PREFIX .. 'limitwake:' .. topic end
local lease_topics = {} -- topic -> true (has leases) | false (none), set by check_lease_keys
local function check_lease_keys(topic)
  if lease_topics[topic] ~= nil then return lease_topics[topic] end
  local t = redis.call('TYPE', leases_key(topic)).ok
  if t == 'none' then
    lease_topics[topic] = false
    return false
  end
  if t ~= 'zset' then error({err = 'SDERR WRONG_TYPE ' .. leases_key(topic) .. ' ' .. t}) end
  refuse_wrong_type(limitwake_key(topic), 'list')
  lease_topics[topic] = true
  return true
end
local function check_settle_keys(topic)
  refuse_wrong_type(stream_key(topic), 'stream')
  refuse_wrong_type(dead_key(topic), 'stream')
  check_lease_keys(topic)
end
local function release_lease(topic, eid)
  if lease_topics[topic] == false then return end
  if redis.call('ZREM', leases_key(topic), eid) == 1 then
    local wk = limitwake_key(topic)
    redis.call('LPUSH', wk, '1')
    redis.call('LTRIM', wk, 0, 63)
  end
end
