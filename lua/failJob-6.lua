#!lua
-- failJob-6: settle a failed delivery: back to the delayed set after a delay, or dead (and
-- then its result kept, state 'x' with the error: includes/keep_result.lua).
-- KEYS: the six partition keys (includes/keys.lua); touches PREFIX..'t:'..topic and PREFIX..'dead:'..topic,
-- and when dead with a keep_result PREFIX..'r:'..id and PREFIX..'w:'..id.
-- ARGV[1] group, ARGV[2] topic, ARGV[3] job id, ARGV[4] stream entry id,
-- ARGV[5] retry delay ms, clamped into [0, 10 years] (a value out of range or not a number
-- never writes a due time past what a Backoff allows), ARGV[6] '1' = dead now (no retry),
-- ARGV[7] error text, ARGV[8] keep_result ms (failJob's ARGV plus this one), then optional:
-- ARGV[9] '1' = snooze (docs/worker.md#snooze: back after the delay, no attempt spent, never
-- dead), ARGV[10] a checkpoint to keep for the next delivery (JSON, '' none; PREFIX..'ck',
-- docs/keys.md#checkpoints), written when the delivery is current and the job goes back.
-- Returns {0} stale delivery (job cancelled/replaced/reclaimed meanwhile), {1, due_ms} retried,
-- {2, dead_entry_id} dead. Dead-letter entry fields: id, error, attempts, at (ms).
-- The retry's due time is counted from the server clock in µs and rounded up to the next ms.
-- Errors: 'SDERR WRONG_TYPE <key> <type>' (checked before any write).
-- Retry-safe: a repeated call finds the delivery no longer current and returns {0}.
-- Layout 2: a header-only record gets its blob back from the stream entry before the entry is
-- deleted (full_record); the delayed or dead record written is full. When that entry is gone
-- (trimmed) the job goes dead whatever its attempts, error 'stream entry lost: ...' (its body is
-- unknown, so it cannot run again).
-- Events (docs/events.md): 'started' (when no heartbeat reported it), then 'retried' or 'dead'
--  (detail: the error), when the queue keeps events.
-- Workflows (docs/workflows.md): a job that goes dead tells its waiters (includes/flow.lua).
-- Dead: the one step every dead end takes (includes/end_dead.lua); its result is kept for the
-- envelope's keep_result, ARGV[8] when the envelope is unknown (a lost entry).
-- @include server_time
-- @include keys
-- @include release_lease
-- @include wake_if_head
-- @include build_record
-- @include due_after
-- @include parse_record
-- @include full_record
-- @include keep_result
-- @include hold
-- @include emit_event
-- @include emit_started
-- @include flow_keep
-- @include read_switches

-- dead_lib(): end_dead with the workflow helpers (includes/end_dead.lua, includes/flow.lua), built
-- only when the job goes dead: built at the top, their closures would cost every retry
-- (docs/keys.md#includes; docs/benchmarks.md, History 2026-11-26)
local function dead_lib()
-- @include new_record
-- @include blob_keep
-- @include dead_result
-- @include flow
-- @include end_dead
  return end_dead
end

local now, now_us = server_time()
local group, topic, id, eid = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local delay, dead_now, err = tonumber(ARGV[5]) or 0, ARGV[6] == '1', ARGV[7]
if delay ~= delay or delay < 0 then delay = 0 end -- NaN, negative
if delay > 315360000000 then delay = 315360000000 end -- 10 years (validation.MAX_DELAY_SECONDS)
local sk = stream_key(topic)
check_partition_keys()
check_settle_keys(topic)
local r = parse_record(redis.call('HGET', K_JOBS, id))
local current = r and r.state == 's' and r.entry == eid
local whole = current and full_record(r) -- read before the entry is deleted
if current then -- 'started' and the outcome share one entry (docs/events.md#entries)
  read_switches() -- events and flow: one HMGET
  events_batch()
  emit_started(id, r, group, eid, now)
end
redis.call('XACK', sk, group, eid)
redis.call('XDEL', sk, eid)
release_lease(topic, eid, id)
if not current then
  release_hold(id, eid) -- a job rescheduled or replaced while this delivery ran: now free
  return {0}
end
local snooze = ARGV[9] == '1' and whole
if not snooze then r.attempts = r.attempts + 1 end
if not whole then err = STREAM_ENTRY_LOST .. '; last error: ' .. err end
if not snooze and (dead_now or r.attempts >= r.max or not whole) then -- ends like every dead job: end_dead
  local entry = dead_lib()(id, r, err, now, tonumber(ARGV[8]))
  events_flush()
  return {2, entry}
end
r.state, r.entry, r.due = 'd', '', due_after(now_us, delay)
redis.call('HSET', K_JOBS, id, build_record(r))
redis.call('ZADD', K_DELAYED, r.due, id)
redis.call('HINCRBY', K_COUNTS, topic, 1)
wake_if_head(id, r.due)
if ARGV[10] and ARGV[10] ~= '' then redis.pcall('HSET', PREFIX .. 'ck', id, ARGV[10]) end -- a foreign value: not kept
emit_event('retried', id, topic, r.attempts, err, now)
events_flush()
return {1, r.due}
