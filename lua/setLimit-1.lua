#!lua flags=allow-oom
-- setLimit-1: set or clear the rate and concurrency limit of one topic (docs/limits.md).
-- KEYS[1] the queue's limits hash, partition 0's PREFIX..'limits': topic -> 'count|per_ms|conc'
-- ARGV[1] topic, ARGV[2] rate count ('' = no rate limit), ARGV[3] rate period ms,
-- ARGV[4] concurrency ('' = no concurrency limit); all three empty: clear the topic's limit.
-- A new rate keeps the bucket's tokens (at most the new count); clearing forgets the bucket and
-- expired leases (leases of running jobs stay until those jobs settle). Waiting workers are
-- woken (one element on the topic's limitwake list).
-- Flags: allow-oom (an operator must be able to loosen a limit while Redis is full).
-- Returns 1 when this call changed the topic's limit, 0 when it already was so.
-- Errors: 'SDERR WRONG_TYPE <key> <type>' (checked before any write).
-- Retry-safe: setting the same limit twice changes nothing.
-- @include server_time

local key, topic = KEYS[1], ARGV[1]
local PFX = string.sub(key, 1, -7)
local bucket, leases, wake = PFX .. 'bucket:' .. topic, PFX .. 'leases:' .. topic, PFX .. 'limitwake:' .. topic
local function check_type(k, want)
  local t = redis.call('TYPE', k).ok
  if t ~= 'none' and t ~= want then error({err = 'SDERR WRONG_TYPE ' .. k .. ' ' .. t}) end
end
check_type(key, 'hash'); check_type(bucket, 'hash')
check_type(leases, 'zset'); check_type(wake, 'list')
local value = ARGV[2] .. '|' .. ARGV[3] .. '|' .. ARGV[4]
local old = redis.call('HGET', key, topic)
if value == '||' then
  redis.call('ZREMRANGEBYSCORE', leases, '-inf', (server_time()))
  redis.call('DEL', bucket)
  if not old then return 0 end
  redis.call('HDEL', key, topic)
elseif old == value then
  return 0
else
  redis.call('HSET', key, topic, value)
  if ARGV[2] == '' then redis.call('DEL', bucket) end
end
redis.call('LPUSH', wake, '1')
redis.call('LTRIM', wake, 0, 63)
return 1
