#!lua flags=allow-oom
-- setPaused-1: pause or resume one topic of a queue (docs/operations.md#pause-and-resume).
-- KEYS[1] the queue's paused hash, partition 0's PREFIX..'paused': topic -> paused since (ms)
-- ARGV[1] topic, ARGV[2] '1' to pause, '0' to resume
-- Flags: allow-oom (an operator must be able to pause or resume while Redis is full; one field).
-- Returns 1 when this call changed the topic's state, 0 when it already was so.
-- Errors: 'SDERR WRONG_TYPE <key> <type>' (checked before any write).
-- Retry-safe: pausing a paused topic (or resuming a running one) changes nothing.
-- @include server_time

local key, topic = KEYS[1], ARGV[1]
local t = redis.call('TYPE', key).ok
if t ~= 'none' and t ~= 'hash' then error({err = 'SDERR WRONG_TYPE ' .. key .. ' ' .. t}) end
if ARGV[2] == '1' then
  return redis.call('HSETNX', key, topic, (server_time()))
end
return redis.call('HDEL', key, topic)
