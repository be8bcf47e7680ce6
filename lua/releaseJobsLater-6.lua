#!lua
-- releaseJobsLater-6: hand deliveries back after a delay, not counted as an attempt: each goes to
-- the delayed set, due ARGV[2] ms from now. Used by a worker process that exits while def handler
-- threads still run (they cannot be stopped): no other worker may start those jobs before the
-- process is gone.
-- KEYS: the six partition keys (includes/keys.lua); touches PREFIX..'t:'..topic.
-- ARGV[1] group, ARGV[2] delay ms, then 3 values per delivery: topic, job id, stream entry id
-- Returns the number handed back (stale deliveries are only acknowledged; a job held behind one,
-- includes/hold.lua, is freed but not before ARGV[2] ms from now).
-- The due time is counted from the server clock in µs and rounded up to the next ms.
-- Errors: 'SDERR WRONG_TYPE <key> <type>' (checked before any write).
-- Retry-safe: a repeated call finds the old entries no longer current.
-- Layout 2: a header-only record gets its blob back from the entry (full_record) and the
-- delayed record is full; a job whose entry is gone goes dead ('stream entry lost') and is not
-- counted as handed back; it ends like any dead job (includes/end_dead: its workflow waiters
-- are told; no result is kept, its envelope being unknown).
-- @include server_time
-- @include keys
-- @include release_lease
-- @include wake_if_head
-- @include build_record
-- @include due_after
-- @include parse_record
-- @include full_record
-- @include hold
-- @include blob_keep
-- @include keep_result
-- @include emit_event
-- @include new_record
-- @include dead_result
-- @include flow_keep
-- @include flow
-- @include end_dead

local now, now_us = server_time()
local group, delay = ARGV[1], tonumber(ARGV[2])
local released = 0
check_partition_keys()
for b = 3, #ARGV, 3 do check_settle_keys(ARGV[b]) end
for b = 3, #ARGV, 3 do
  local topic, id, eid = ARGV[b], ARGV[b + 1], ARGV[b + 2]
  local sk = stream_key(topic)
  local r = parse_record(redis.call('HGET', K_JOBS, id))
  local current = r and r.state == 's' and r.entry == eid
  local whole = current and full_record(r) -- read before the entry is deleted
  redis.call('XACK', sk, group, eid)
  release_lease(topic, eid, id)
  if current and not whole then
    redis.call('XDEL', sk, eid)
    end_dead(id, r, STREAM_ENTRY_LOST, now, nil)
  elseif r and r.state == 'd' and r.entry == eid then
    -- a job held behind this delivery (includes/hold.lua): its thread may still run, so the
    -- next run waits as long as a handed-back one would
    redis.call('XDEL', sk, eid)
    release_hold(id, eid, due_after(now_us, delay))
  elseif current then
    redis.call('XDEL', sk, eid)
    r.state, r.entry, r.due = 'd', '', due_after(now_us, delay)
    redis.call('HSET', K_JOBS, id, build_record(r))
    redis.call('ZADD', K_DELAYED, r.due, id)
    redis.call('HINCRBY', K_COUNTS, topic, 1)
    wake_if_head(id, r.due)
    released = released + 1
  end
end
return released
