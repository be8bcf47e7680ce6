-- requeue_entry(r, id, old_entry, group, count_attempt, why, now): put a delivery of group back
-- at the tail of its topic stream under a new entry id so any live consumer reads it next; with
-- count_attempt the delivery counts as a failed attempt and the job goes dead after its last one
-- (dead-letter entry with error why, at now), ending like any dead job (includes/end_dead.lua:
-- its result kept for its envelope's keep_result and its waiters woken, its 'dead' event, its
-- workflow waiters told; so the caller writes no 'dead' event). Updates r and the jobs hash.
-- Returns the new entry id, or false when the job went dead. Frees the delivery's limit lease
-- (callers check the lease keys' types first: check_lease_keys).
-- Layout 2: a header-only record (docs/keys.md#layouts) gets its blob from the old entry (or
-- from the caller, who may have fetched it with full_record already) for the new entry and
-- stays header-only in the jobs hash; a dead record is full. When the old entry is gone the
-- job goes dead ('stream entry lost'; no result is kept, its envelope being unknown).
-- Expiry (includes/expired.lua): a job past its deadline is not put back: it goes to the dead
-- letters with error 'expired' (r.expired set, false returned; the 'expired' event is written,
-- so the caller writes no other); a job with a deadline still ahead gets it in the new entry's
-- 'x' field, as promoteDue writes it; a job with a checkpoint (PREFIX..'ck') gets it in field 'c'
-- (docs/worker.md#checkpoints).
-- @include keys
-- @include release_lease
-- @include build_record
-- @include full_record
-- @include parse_record
-- @include new_record
-- @include wake_if_head
-- @include blob_keep
-- @include keep_result
-- @include emit_event
-- @include dead_result
-- @include flow
-- @include end_dead
-- @include expired
local function requeue_entry(r, id, old_entry, group, count_attempt, why, now)
  local sk = stream_key(r.topic)
  local whole = full_record(r) -- read before the entry is deleted
  redis.call('XACK', sk, group, old_entry)
  redis.call('XDEL', sk, old_entry)
  release_lease(r.topic, old_entry, id)
  if count_attempt then r.attempts = r.attempts + 1 end
  if not whole then why = STREAM_ENTRY_LOST .. '; ' .. why end
  if r.attempts >= r.max or not whole then
    end_dead(id, r, why, now, nil)
    return false
  end
  local deadline = job_deadline(id)
  if deadline and now >= deadline and expire_job(id, r, now) then
    r.expired = true
    return false
  end
  r.state = 's'
  r.entry = ''
  -- a checkpoint of an earlier run rides in field 'c' (docs/worker.md#checkpoints)
  local ck = redis.pcall('HGET', PREFIX .. 'ck', id)
  if type(ck) ~= 'string' then ck = nil end -- none, or a foreign value: ignored
  if ck and deadline then
    r.entry = redis.call('XADD', sk, '*', 'id', id, 'rec', build_record(r), 'c', ck, 'x', deadline)
  elseif ck then
    r.entry = redis.call('XADD', sk, '*', 'id', id, 'rec', build_record(r), 'c', ck)
  elseif deadline then
    r.entry = redis.call('XADD', sk, '*', 'id', id, 'rec', build_record(r), 'x', deadline)
  else
    r.entry = redis.call('XADD', sk, '*', 'id', id, 'rec', build_record(r))
  end
  local blob = r.blob
  if r.header_only then r.blob = '' end
  redis.call('HSET', K_JOBS, id, build_record(r))
  r.blob = blob
  return r.entry
end
