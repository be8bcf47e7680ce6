#!lua
-- replayDead-6: put dead jobs of one topic back as new jobs: attempts reset to 0, due after a delay.
-- KEYS: the six partition keys (includes/keys.lua); touches PREFIX..'dead:'..topic.
-- ARGV[1] topic, ARGV[2] count (bounded batch), ARGV[3] delay ms, ARGV[4] job id ('' = oldest
-- first), ARGV[5] (optional) the queue's partition count: where a replayed child's parents live
-- Returns the ids replayed (an empty list when nothing is left). Retry-safe: a replayed job is no
-- longer dead and is not replayed again. A call stops before its records pass 1 MiB (at least
-- one job); the caller calls again until the list is empty. The due time is counted from the
-- server clock in µs and rounded up to the next ms.
-- Errors: 'SDERR WRONG_TYPE <key> <type>' (checked before any write).
-- Events (docs/events.md): 'enqueued' per job replayed (detail: the due time and ' replayed'),
--  when the queue keeps events.
-- Workflows (docs/workflows.md#dependencies-after): a child dead for a failed parent re-checks
-- its parents (includes/flow_recheck.lua): it is due when they all succeeded, waits for those
-- pending (asking parents of other partitions through the outbox), and goes back to the dead
-- letters at once (a new entry, not in the reply) when one of this partition is still dead.
-- Expiry (docs/expiry.md): a replayed job loses its deadline (else an expired job would expire
-- again at once); its priority and key stay (PREFIX..'opts', includes/expired.lua).
-- @include server_time
-- @include keys
-- @include parse_record
-- @include dead_candidates
-- @include wake_if_head
-- @include build_record
-- @include due_after
-- @include emit_event
-- @include blob_keep
-- @include keep_result
-- @include new_record
-- @include dead_result
-- @include flow_keep
-- @include flow
-- @include end_dead
-- @include expired
-- @include flow_partition
-- @include flow_recheck

local MAX_BATCH_BYTES = 1048576
local now, now_us = server_time()
local topic, count, delay, only = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local parts = tonumber(ARGV[5])
local dk = dead_key(topic)
check_partition_keys()
local candidates = dead_candidates(topic, count, only)
local replayed = {}
local bytes = 0
for _, c in ipairs(candidates) do
  local eid, id = c[1], c[2]
  local raw = id and redis.call('HGET', K_JOBS, id)
  if raw and #replayed > 0 and bytes + #raw > MAX_BATCH_BYTES then break end
  if raw then bytes = bytes + #raw end
  redis.call('XDEL', dk, eid)
  local r = parse_record(raw)
  if r and r.state == 'x' and r.entry == eid then
    local due, how = due_after(now_us, delay), 'd'
    r.attempts = 0
    drop_deadline(id)
    if redis.call('EXISTS', PREFIX .. 'dd:' .. id) == 1 then
      how = flow_recheck(id, r, delay, due, parts, now)
    else
      flow_write_due(id, r, due)
    end
    if how ~= 'x' then
      replayed[#replayed + 1] = id
      emit_event('enqueued', id, topic, 0, (how == 'w' and 'waiting' or r.due) .. ' replayed', now)
    end
  end
end
return replayed
