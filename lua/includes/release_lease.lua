-- release_lease(topic, eid, id): free the limit lease of a delivery (a no-op when it has none) and
-- wake one waiting worker; for a job id with a fairness key ('{key}rest'), also its key lease
-- (release_key_lease: includes/key_limits.lua, includes/staging.lua). A job without a key
-- costs no command for it. Limits (docs/limits.md) keep per-topic keys next to the topic stream,
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
-- release_key_lease(topic, eid, id): free the key lease of a delivery of a keyed job; its lane,
-- when a key limit parked it, goes back to the turns, and one waiting taker is woken
local function release_key_lease(topic, eid, id)
  if not id or string.byte(id, 1) ~= 123 then return end -- '{'
  local key = string.match(id, '^{([^}]+)}')
  if not key or redis.pcall('ZREM', PREFIX .. 'kl:' .. topic .. '|' .. key, eid) ~= 1 then return end
  if redis.pcall('ZREM', PREFIX .. 'parked:' .. topic, key) == 1
     and redis.call('EXISTS', PREFIX .. 'rq:' .. topic .. '|' .. key) == 1 then
    local lk = PREFIX .. 'lanes:' .. topic
    local last = redis.call('ZRANGE', lk, -1, -1, 'WITHSCORES')
    redis.pcall('ZADD', lk, last[2] and tonumber(last[2]) + 1 or 1, key)
  end
  local wk = PREFIX .. 'stagewake:' .. topic
  if redis.pcall('LPUSH', wk, '1') then redis.pcall('LTRIM', wk, 0, 63) end
end
local function release_lease(topic, eid, id)
  release_key_lease(topic, eid, id)
  if lease_topics[topic] == false then return end
  if redis.call('ZREM', leases_key(topic), eid) == 1 then
    local wk = limitwake_key(topic)
    redis.call('LPUSH', wk, '1')
    redis.call('LTRIM', wk, 0, 63)
  end
end
