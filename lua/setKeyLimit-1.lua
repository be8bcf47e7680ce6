#!lua flags=allow-oom
-- setKeyLimit-1: set or clear the key limit of one topic in one partition (docs/limits.md#key-limits):
-- every fairness key of the topic is held to it by takeStaged.
-- KEYS[1] the partition's PREFIX..'keylimits' (hash topic -> 'count|per_ms|concurrency'); the
-- library calls it once per partition (each partition holds its own keys' state).
-- ARGV[1] topic, ARGV[2] key rate count ('' = no key rate), ARGV[3] key rate period ms,
-- ARGV[4] key concurrency ('' = none); all three empty: clear the topic's key limit.
-- Takers waiting on the topic are woken (one element on its stagewake list), so a loosened limit
-- is used at once; lanes parked by the old limit go back to the turns at their next take.
-- Flags: allow-oom (an operator must be able to loosen a limit while Redis is full).
-- Returns 1 when this call changed the topic's key limit, 0 when it already was so.
-- Errors: 'SDERR WRONG_TYPE <key> <type>' (checked before any write).
-- Retry-safe: setting the same limit twice changes nothing.

local key, topic = KEYS[1], ARGV[1]
local PFX = string.sub(key, 1, -10)
local wake, parked = PFX .. 'stagewake:' .. topic, PFX .. 'parked:' .. topic
local function check_type(k, want)
  local t = redis.call('TYPE', k).ok
  if t ~= 'none' and t ~= want then error({err = 'SDERR WRONG_TYPE ' .. k .. ' ' .. t}) end
end
local lanes = PFX .. 'lanes:' .. topic
check_type(key, 'hash'); check_type(wake, 'list'); check_type(parked, 'zset'); check_type(lanes, 'zset')
local value = ARGV[2] .. '|' .. ARGV[3] .. '|' .. ARGV[4]
local old = redis.call('HGET', key, topic)
if value == '||' then
  if not old then return 0 end
  redis.call('HDEL', key, topic)
elseif old == value then
  return 0
else
  redis.call('HSET', key, topic, value)
end
-- parked lanes are looked at again at once
local last = redis.call('ZRANGE', lanes, -1, -1, 'WITHSCORES')
local turn = last[2] and tonumber(last[2]) or 0
for _, k in ipairs(redis.call('ZRANGE', parked, 0, 999)) do
  turn = turn + 1
  redis.call('ZADD', lanes, turn, k)
  redis.call('ZREM', parked, k)
end
redis.call('LPUSH', wake, '1')
redis.call('LTRIM', wake, 0, 63)
return 1
