#!lua
-- expireJobs-6: settle deliveries a consumer read but must not run because their job's deadline
-- (docs/expiry.md) has passed: its open step saw the entry's 'x' field (the deadline promoteDue
-- wrote) at or before the server clock read in the same round trip as the read. The deadline is
-- checked again here, on this script's own clock, against PREFIX..'opts' (includes/expired.lua).
-- KEYS: the six partition keys (includes/keys.lua); touches PREFIX..'t:'..topic and
-- PREFIX..'dead:'..topic (and, for a job that keeps its result, PREFIX..'r:'..id, 'w:'..id).
-- ARGV[1] group, then 3 values per delivery: topic, job id, stream entry id
-- Returns one number per delivery, in order: 2 expired (the job is dead with error 'expired',
-- not counted as an attempt: it never ran), 1 not expired after all (a clock read elsewhere, e.g.
-- another node of a cluster, or a deadline moved by a reschedule: handed back to the stream tail,
-- not an attempt), 0 stale (the delivery is no longer current: only acknowledged; a job held
-- behind it is freed).
-- Errors: 'SDERR WRONG_TYPE <key> <type>' (checked before any write).
-- Retry-safe: a repeated call finds the delivery no longer current and answers 0.
-- Layout 2: a header-only record gets its blob back from the stream entry (full_record) before
-- the entry is deleted; the dead record is whole. When that entry is gone the job goes dead
-- ('stream entry lost', requeue_entry).
-- Events (docs/events.md): 'expired' (detail: the deadline ms), when the queue keeps events.
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
local outcomes = {}
check_partition_keys()
for b = 2, #ARGV, 3 do check_settle_keys(ARGV[b]) end
for b = 2, #ARGV, 3 do
  local topic, id, eid = ARGV[b], ARGV[b + 1], ARGV[b + 2]
  local sk = stream_key(topic)
  local r = parse_record(redis.call('HGET', K_JOBS, id))
  if not (r and r.state == 's' and r.entry == eid) then
    redis.call('XACK', sk, group, eid)
    release_lease(topic, eid, id)
    if r and r.state == 'd' and release_hold(id, eid) then redis.call('XDEL', sk, eid) end
    outcomes[#outcomes + 1] = 0
  elseif is_expired(id, now) and full_record(r) then
    redis.call('XACK', sk, group, eid)
    redis.call('XDEL', sk, eid)
    release_lease(topic, eid, id)
    expire_job(id, r, now)
    outcomes[#outcomes + 1] = 2
  else -- requeue_entry expires it too if it is (a lost entry: dead)
    local back = requeue_entry(r, id, eid, group, false, 'not expired', now)
    if back then outcomes[#outcomes + 1] = 1
    elseif r.expired then outcomes[#outcomes + 1] = 2
    else outcomes[#outcomes + 1] = 0 end
  end
end
return outcomes
