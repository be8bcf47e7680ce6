-- expired: job deadlines (docs/expiry.md). A job enqueued with expires= has a field in
-- PREFIX..'opts' (hash job id -> '<priority>|<deadline_ms>|<key>', docs/keys.md): deadline_ms is
-- absolute epoch ms on the Redis clock (empty: no deadline). A queue that never used job options
-- has no such key: the first lookup of a script run costs one EXISTS, every later one nothing.
-- job_deadline(id): the job's deadline ms, or nil.
-- is_expired(id, now): the deadline when the job has one and now >= it, else nil.
-- deadlines_of(ids, n): HMGET of ids[1..n] at once (nil when the key is absent): a table i ->
--  deadline (nil where none), for a batch (promoteDue).
-- drop_deadline(id): forget the deadline, keeping priority and key (a replay); the field goes
--  when nothing else is left in it (priority 5, no key).
-- shift_deadline(id, by): move the deadline by `by` ms (a reschedule).
-- expire_job(id, r, now): job id, whose record r (parse_record's table, its blob whole) the
--  caller has taken out of its place (delayed set and counts, or stream entry and pending list),
--  goes to its topic's dead letters with error 'expired' (replayable like any dead letter), as
--  any dead end does (includes/end_dead.lua): its result kept when its envelope asks (state x,
--  error 'expired'), event 'expired' (detail: the deadline), its workflow waiters told (a child
--  waiting for it goes dead with 'parent failed: <id>', a batch counts it dead; after
--  defer_dead_flow(), at flush_dead_flow(now)). Attempts are not counted: the job never ran.
--  Returns the dead entry id, or false (nothing written) when the XADD failed (a foreign value
--  at the dead-letter key).
-- @include keys
-- @include build_record
-- @include blob_keep
-- @include keep_result
-- @include emit_event
-- @include dead_result
-- @include parse_record
-- @include new_record
-- @include wake_if_head
-- @include flow
-- @include end_dead
local EXPIRED = 'expired'
local OPTS_KEY = K_OPTS
local opts_exist = nil -- one EXISTS per script run, at the first lookup
local function has_opts()
  if opts_exist == nil then opts_exist = redis.call('EXISTS', OPTS_KEY) == 1 end
  return opts_exist
end
local function opts_deadline(raw)
  local d = raw and string.match(raw, '^%d|(%d+)|')
  return d and tonumber(d)
end
local function job_deadline(id)
  if not has_opts() then return nil end
  return opts_deadline(redis.call('HGET', OPTS_KEY, id))
end
local function is_expired(id, now)
  local d = job_deadline(id)
  if d and now >= d then return d end
  return nil
end
local function deadlines_of(ids, n)
  if n < 1 or not has_opts() then return nil end
  local raws = redis.call('HMGET', OPTS_KEY, unpack(ids, 1, n))
  local found = {}
  for i = 1, n do found[i] = opts_deadline(raws[i]) end
  return found
end
local function drop_deadline(id)
  if not has_opts() then return end
  local raw = redis.call('HGET', OPTS_KEY, id)
  local p, d, k = string.match(raw or '', '^(%d)|(%d*)|(.*)$')
  if not p or d == '' then return end
  if p == '5' and k == '' then redis.call('HDEL', OPTS_KEY, id)
  else redis.call('HSET', OPTS_KEY, id, p .. '||' .. k) end
end
local function shift_deadline(id, by)
  if by == 0 or not has_opts() then return end
  local raw = redis.call('HGET', OPTS_KEY, id)
  local p, d, k = string.match(raw or '', '^(%d)|(%d+)|(.*)$')
  if not p then return end
  redis.call('HSET', OPTS_KEY, id, p .. '|' .. string.format('%d', tonumber(d) + by) .. '|' .. k)
end
local function expire_job(id, r, now)
  return end_dead(id, r, EXPIRED, now, nil, 'expired', job_deadline(id) or '')
end
