#!lua flags=allow-oom
-- touchLeases-1: move on the leases of running deliveries of partitions other than 0
-- (docs/limits.md#more-than-one-partition): sent with the heartbeat (touchJobs) of such
-- deliveries, so a lease expires one ttr after the last heartbeat, as the delivery does.
-- KEYS[1] the queue's limits hash sd:{Q#0}:limits (the other keys: includes/limit_state.lua)
-- ARGV: 3 values per delivery: topic, lease member '<p>:<entry id>', ttr ms
-- Returns how many leases were moved on (a lease freed or expired meanwhile is not re-added).
-- Flags: allow-oom (it changes scores only).
-- Errors: 'SDERR WRONG_TYPE <key> <type>' (checked before any write), 'SDERR BAD_ARGS'.
-- Retry-safe: moving a lease on twice moves it to the same place from a later now.
-- @include server_time
-- @include limit_check
-- @include limit_state

if #ARGV % 3 ~= 0 then return redis.error_reply('SDERR BAD_ARGS') end
for b = 1, #ARGV, 3 do check_limit_keys(ARGV[b]) end
local now = server_time()
local total = 0
for b = 1, #ARGV, 3 do
  local ttr = tonumber(ARGV[b + 2]) or 60000
  total = total + redis.call('ZADD', lease_zset(ARGV[b]), 'XX', 'CH', now + ttr, ARGV[b + 1])
end
return total
