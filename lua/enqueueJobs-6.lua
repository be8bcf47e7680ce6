-- enqueueJobs-6: add a bounded batch of jobs to the delayed set, idempotent by job id.
-- KEYS: the six partition keys (includes/keys.lua).
-- ARGV[1]  past tolerance ms for absolute due times
-- ARGV[2]  keep_done ms (> 0: acknowledged ids stay taken as tombstones; used here only to purge)
-- then 8 values per job: id, topic, when_kind ('r' relative | 'a' absolute), when_ms,
--                        ttr_ms, max_attempts, replace ('0' | '1'), blob
-- Returns one {created (1|0), due_ms, state} per job; state is the existing job's state when
-- created is 0 and replace is '0'.
-- Errors: 'SDERR AT_IN_PAST <id>' (nothing written), 'SDERR BAD_ARGS'.
-- Side effects: HSET jobs, ZADD delayed, HINCRBY counts, ZADD wake when a job becomes the head.
-- Retry-safe: a repeated call finds the ids and reports created=0.
-- @include now_ms
-- @include keys
-- @include record
-- @include wake_if_head
-- @include detach
-- @include purge_done
-- @include resolve_due

local now = now_ms()
local tolerance = tonumber(ARGV[1])
local per_job = 8
if (#ARGV - 2) % per_job ~= 0 or not tolerance then return redis.error_reply('SDERR BAD_ARGS') end
local n = (#ARGV - 2) / per_job

local dues = {}
for i = 0, n - 1 do
  local b = 3 + i * per_job
  local due = resolve_due(ARGV[b + 2], tonumber(ARGV[b + 3]), now, tolerance)
  if not due then return redis.error_reply('SDERR AT_IN_PAST ' .. ARGV[b]) end
  dues[i] = due
end

local out = {}
local head_id, head_due = nil, nil
for i = 0, n - 1 do
  local b = 3 + i * per_job
  local id, topic = ARGV[b], ARGV[b + 1]
  local old_raw = redis.call('HGET', K_JOBS, id)
  local old = parse_record(old_raw)
  if old and old.state == 'c' then
    local expires = redis.call('ZSCORE', K_DONE, id)
    if not expires or tonumber(expires) <= now then -- a tombstone past its time frees the id
      detach(old, id)
      old_raw, old = nil, nil
    end
  end
  if old_raw and ARGV[b + 6] ~= '1' then
    out[#out + 1] = {0, old and old.due or 0, old and old.state or '?'}
  else
    if old then detach(old, id) end
    local due = dues[i]
    local rec = {state = 'd', attempts = 0, due = due, created = now, ttr = tonumber(ARGV[b + 4]),
                 max = tonumber(ARGV[b + 5]), entry = '', topic = topic, blob = ARGV[b + 7]}
    redis.call('HSET', K_JOBS, id, build_record(rec))
    redis.call('ZADD', K_DELAYED, due, id)
    redis.call('HINCRBY', K_COUNTS, topic, 1)
    if not head_due or due < head_due then head_id, head_due = id, due end
    out[#out + 1] = {old_raw and 0 or 1, due, 'd'}
  end
end
if head_id then wake_if_head(head_id, head_due) end
purge_done(now)
return out
