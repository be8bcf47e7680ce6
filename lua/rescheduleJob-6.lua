#!lua
-- rescheduleJob-6: give one job a new due time, from any state but done. A ready job leaves its
-- stream; a dead job comes back with its attempts reset to 0. A reserved job (a consumer runs it)
-- keeps its delivery and is held behind it (includes/hold.lua): its next run starts at the new
-- due time but not before that delivery has settled or its lease has expired (never twice at
-- once); the running handler's acknowledgement settles the delivery only.
-- KEYS: the six partition keys (includes/keys.lua).
-- ARGV[1] job id, ARGV[2] when_kind ('r' | 'a'), ARGV[3] when_ms, ARGV[4] past tolerance ms,
-- ARGV[5] (optional) keep_result ms for a job whose envelope is unknown (a lost entry, below)
-- Returns {1, due_ms} or {0} when there is no such job (or it waits for its parents: a waiting
-- job has no due time yet, docs/workflows.md).
-- Errors: 'SDERR AT_IN_PAST <id>' (nothing written). Retry-safe: a repeat sets the same due
-- (relative delays are measured again from the server clock, in µs, rounded up to the next ms).
-- Errors also: 'SDERR WRONG_TYPE <key> <type>' (checked before any write).
-- Layout 2: a header-only record gets its blob back from its stream entry (full_record) and the
-- delayed record is full. When that entry is gone the job goes dead instead ('stream entry
-- lost': its body is unknown) and the reply is {0}; it ends like any dead job (includes/end_dead:
-- its result kept for ARGV[5] ms and its waiters woken, its workflow waiters told).
-- Expiry (docs/expiry.md): a job with a deadline (PREFIX..'opts') keeps its window: the deadline
-- moves by as much as the due time does (new due - old due); a dead job loses its deadline, as a
-- replay does (includes/expired.lua).
-- Workflows: a dead child's kept parents (PREFIX..'dd:'..id) go (includes/flow.lua,
-- flow_forget_dead): it comes back as a plain job, which a replay does not re-check.
-- @include server_time
-- @include keys
-- @include wake_if_head
-- @include staging
-- @include detach
-- @include due_after
-- @include resolve_due
-- @include build_record
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
-- @include expired

local now, now_us = server_time()
local id = ARGV[1]
local due = resolve_due(ARGV[2], tonumber(ARGV[3]), now, now_us, tonumber(ARGV[4]))
if not due then return redis.error_reply('SDERR AT_IN_PAST ' .. id) end
local r = parse_record(redis.call('HGET', K_JOBS, id))
if not r or r.state == 'c' or r.state == 'w' then return {0} end -- w: docs/workflows.md
check_partition_keys()
if r.entry ~= '' and (r.state == 's' or r.state == 'd') then check_hold_keys() end
if r.state == 's' then refuse_wrong_type(stream_key(r.topic), 'stream') end
if r.state == 's' or r.state == 'x' then refuse_wrong_type(dead_key(r.topic), 'stream') end
local whole = r.state ~= 's' or full_record(r) -- read before the entry is deleted
local held, not_before = hold_of(r, id, now)
-- a held delivery stays in its stream and pending list until it settles
if not held or r.state == 'd' then detach(r, id) end
if not whole then
  end_dead(id, r, STREAM_ENTRY_LOST, now, tonumber(ARGV[5]))
  return {0}
end
if r.state == 'x' then r.attempts = 0; drop_deadline(id); flow_forget_dead({id}) -- its kept parents
else shift_deadline(id, due - r.due) end
r.state, r.entry, r.due = 'd', held or '', due
redis.call('HSET', K_JOBS, id, build_record(r))
local score = due
if held and not_before > score then score = not_before end
redis.call('ZADD', K_DELAYED, score, id)
redis.call('HINCRBY', K_COUNTS, r.topic, 1)
wake_if_head(id, score)
return {1, due}
