#!lua flags=allow-oom
-- freeLeases-1: free the leases of deliveries of partitions other than 0 (docs/limits.md#more-
-- than-one-partition), sent next to every settle of such a delivery (ack, fail, hand-back)
-- and for deliveries a heartbeat found lost; waiting workers are woken, one element per lease
-- freed. A lease not freed (a lost call, a killed worker) expires with its job's ttr.
-- KEYS[1] the queue's limits hash sd:{Q#0}:limits (the other keys: includes/limit_state.lua)
-- ARGV: 2 values per delivery: topic, lease member '<p>:<entry id>'
-- Returns how many leases were freed.
-- Flags: allow-oom (it frees memory).
-- Errors: 'SDERR WRONG_TYPE <key> <type>' (checked before any write), 'SDERR BAD_ARGS'.
-- Retry-safe: a lease freed already is not there to free.
-- @include limit_check
-- @include limit_state

if #ARGV % 2 ~= 0 then return redis.error_reply('SDERR BAD_ARGS') end
for b = 1, #ARGV, 2 do check_limit_keys(ARGV[b]) end
local total = 0
for b = 1, #ARGV, 2 do
  local freed = redis.call('ZREM', lease_zset(ARGV[b]), ARGV[b + 1])
  wake_waiters(ARGV[b], freed)
  total = total + freed
end
return total
