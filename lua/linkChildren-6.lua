#!lua
-- linkChildren-6: note waiters of jobs of this partition that live in another one (a child, a
-- batch), before the waiter is written there (docs/workflows.md#across-partitions).
-- KEYS: the six partition keys (includes/keys.lua); touches PREFIX..'children:'..parent.
-- ARGV[1] outcome keep ms (field 'flow' of PREFIX..'meta', written when absent), then pairs:
-- parent id, waiter ref '<partition>|<child id or #batch>'.
-- Returns one value per pair: 'l' the parent is live (the ref is noted: it is told when the
-- parent ends), 's' / 'x' / 'c' it ended so (nothing noted), 'n' unknown (nothing noted).
-- Retry-safe: refs are set members; a ref whose waiter is never written is dropped where it
-- is handed over (includes/flow.lua: an early note that expires).
-- @include keys
-- @include parse_record
-- @include build_record
-- @include new_record
-- @include wake_if_head
-- @include emit_event
-- @include blob_keep
-- @include keep_result
-- @include dead_result
-- @include flow_keep
-- @include flow

local keep = tonumber(ARGV[1])
if not keep or #ARGV % 2 ~= 1 then return redis.error_reply('SDERR BAD_ARGS') end
check_partition_keys()
redis.call('HSETNX', PREFIX .. 'meta', 'flow', keep)
local out = {}
for b = 2, #ARGV, 2 do
  local o = flow_outcome(ARGV[b], 0) or 'n'
  if o == 'l' then redis.call('SADD', PREFIX .. 'children:' .. ARGV[b], ARGV[b + 1]) end
  out[#out + 1] = o
end
return out
