#!lua
-- releaseJobs-6: hand deliveries back at once (graceful shutdown): each goes to the tail of its
-- topic stream under a new entry id, not counted as an attempt, for any live consumer to read.
-- KEYS: the six partition keys (includes/keys.lua); touches PREFIX..'t:'..topic.
-- ARGV[1] group, then 3 values per delivery: topic, job id, stream entry id
-- Returns the number handed back (stale deliveries are only acknowledged, and a job held behind
-- one freed, includes/hold.lua; a job that went dead
-- instead, its stream entry lost, is not counted).
-- Errors: 'SDERR WRONG_TYPE <key> <type>' (checked before any write).
-- Retry-safe: a repeated call finds the old entries no longer current.
-- Layout 2: a header-only record keeps its blob through the move (requeue_entry); a job whose
-- entry is gone goes dead ('stream entry lost').
-- Expiry (docs/expiry.md): a job past its deadline is not handed back: it goes dead with error
-- 'expired' (event 'expired'), not counted.
-- @include server_time
-- @include keys
-- @include build_record
-- @include release_lease
-- @include full_record
-- @include blob_keep
-- @include keep_result
-- @include emit_event
-- @include parse_record
-- @include new_record
-- @include wake_if_head
-- @include dead_result
-- @include flow_keep
-- @include flow
-- @include end_dead
-- @include expired
-- @include requeue_entry
-- @include hold

local now = server_time()
local group = ARGV[1]
local released = 0
check_partition_keys()
for b = 2, #ARGV, 3 do check_settle_keys(ARGV[b]) end
for b = 2, #ARGV, 3 do
  local topic, id, eid = ARGV[b], ARGV[b + 1], ARGV[b + 2]
  local r = parse_record(redis.call('HGET', K_JOBS, id))
  if r and r.state == 's' and r.entry == eid then
    if requeue_entry(r, id, eid, group, false, 'released', now) then released = released + 1 end
  else
    redis.call('XACK', stream_key(topic), group, eid)
    release_lease(topic, eid, id)
    -- a job held behind this delivery (includes/hold.lua): the run ended, the entry goes
    if r and r.state == 'd' and release_hold(id, eid) then redis.call('XDEL', stream_key(topic), eid) end
  end
end
return released
