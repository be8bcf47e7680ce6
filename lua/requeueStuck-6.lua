#!lua
-- requeueStuck-6: find deliveries whose consumer went silent and put them back.
-- Walks one topic's pending list from a cursor (bounded); an entry idle at least its job's own ttr
-- (or ARGV[5] when >= 0) is re-queued at the stream tail as a new attempt (dead after the last), or
-- with ARGV[6] handed to that consumer (XCLAIM). Pending ids whose entry or job is gone are acked;
-- the delivery a rescheduled job is held behind (includes/hold.lua) only once idle that long,
-- and the job is then freed.
-- KEYS: the six partition keys (includes/keys.lua); touches PREFIX..'t:'..topic, PREFIX..'dead:'..topic.
-- ARGV[1] group, ARGV[2] topic, ARGV[3] cursor ('-' to start, else exclusive entry id),
-- ARGV[4] count (max pending rows looked at), ARGV[5] min idle ms (-1 = each job's ttr),
-- ARGV[6] consumer to hand jobs to ('' = re-queue for anyone)
-- Optional (docs/guarantees.md#never-twice-at-once), a reclaimer that counts only the silence it
-- witnessed: ARGV[7] the server ms of its previous call (0: none yet; absent or -1: no such
-- rule), ARGV[8] the server ms since which it has been in contact, ARGV[9] the longest gap
-- between two of its calls that is not an outage (ms). A gap longer than that (Redis down or
-- restarted, the reclaimer cut off) makes its contact start now. An entry then counts as idle
-- at most the time since then: an outage is not a consumer's silence. ARGV[10] the reclaimer's
-- own consumer name and ARGV[11..] the entry ids that consumer is running: never taken.
-- Returns {next_cursor ('0-0' when done), moved ids, dead ids, cleaned count, now ms, contact
-- since ms (-1 without the rule)}.
-- A call also stops (its cursor at the last entry looked at) before the records it re-queues pass
-- 1 MiB, after at least one.
-- Errors: 'SDERR NO_GROUP <topic>' when the stream or group does not exist, 'SDERR WRONG_TYPE
-- <key> <type>' (checked before any write).
-- Retry-safe: a moved delivery has a fresh idle time and is not moved again.
-- Layout 2: a header-only record takes its blob from the entry read here into the new entry
-- (requeue_entry); the byte budget counts it.
-- Events (docs/events.md): 'retried' or 'dead' per job re-queued for its silent consumer (detail:
--  why), when the queue keeps events; 'expired' instead for a job past its deadline
--  (docs/expiry.md: it goes dead with error 'expired' and is listed with the dead ids).
-- A job that goes dead here ends like any dead job (includes/end_dead.lua): its result kept for
--  its envelope's keep_result and its result waiters woken, its workflow waiters told.
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
local group, topic, cursor = ARGV[1], ARGV[2], ARGV[3]
local count, min_idle, to = tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6]
local MAX_BATCH_BYTES = 1048576
-- the silence this reclaimer witnessed (nil: no limit), and the deliveries it runs itself
local prev, since = tonumber(ARGV[7] or '-1') or -1, -1
local witnessed = nil
if prev >= 0 then
  since = tonumber(ARGV[8]) or now
  if prev == 0 or now - prev > (tonumber(ARGV[9]) or 0) or since > now then
    since = now -- contact (re)gained with this call: what came before may have been an outage
  end
  witnessed = now - since
end
local self_name, running = ARGV[10] or '', {}
for i = 11, #ARGV do running[ARGV[i]] = true end
local sk = stream_key(topic)
check_partition_keys()
check_settle_keys(topic)
if redis.call('EXISTS', sk) == 0 then return redis.error_reply('SDERR NO_GROUP ' .. topic) end
local groups = redis.call('XINFO', 'GROUPS', sk)
local found = false
for _, g in ipairs(groups) do
  for i = 1, #g, 2 do if g[i] == 'name' and g[i + 1] == group then found = true end end
end
if not found then return redis.error_reply('SDERR NO_GROUP ' .. topic) end
local start = cursor
if cursor ~= '-' then start = '(' .. cursor end
local rows = redis.call('XPENDING', sk, group, start, '+', count)
local moved, dead, cleaned = {}, {}, 0
local bytes, last = 0, nil
for _, row in ipairs(rows) do
  local eid, owner, idle = row[1], row[2], tonumber(row[3])
  if witnessed and idle > witnessed then idle = witnessed end
  if owner == self_name and running[eid] then idle = -1 end -- its own consumer runs it
  local entries = redis.call('XRANGE', sk, eid, eid)
  local id, f = nil, entries[1] and entries[1][2]
  for i = 1, #(f or {}), 2 do if f[i] == 'id' then id = f[i + 1] end end
  local raw = id and redis.call('HGET', K_JOBS, id)
  if raw and bytes > 0 and bytes + #raw > MAX_BATCH_BYTES then break end
  last = eid
  local r = parse_record(raw)
  if r and r.state == 'd' and r.entry == eid then
    -- the delivery a rescheduled job is held behind (includes/hold.lua): it may still run; once
    -- its lease ran out (idle past its entry's ttr) it is dropped and the job freed
    local limit = min_idle
    if limit < 0 then limit = entry_ttr(f) or r.ttr end
    if idle >= limit then
      redis.call('XACK', sk, group, eid)
      redis.call('XDEL', sk, eid)
      release_lease(topic, eid, id)
      release_hold(id, eid)
      cleaned = cleaned + 1
    end
  elseif not (r and r.state == 's' and r.entry == eid) then
    redis.call('XACK', sk, group, eid)
    redis.call('XDEL', sk, eid)
    release_lease(topic, eid, id)
    cleaned = cleaned + 1
  else
    local limit = min_idle
    if limit < 0 then limit = r.ttr end
    if idle >= limit then
      if to ~= '' then
        if owner ~= to then
          redis.call('XCLAIM', sk, group, to, 0, eid, 'JUSTID')
          moved[#moved + 1] = id
        end
      else
        local why = 'ttr expired: consumer ' .. owner .. ' silent for ' .. idle .. ' ms'
        full_record(r, f) -- the blob of a header-only record, from the entry read above
        bytes = bytes + #raw + #r.blob
        local back = requeue_entry(r, id, eid, group, true, why, now)
        -- a dead end wrote its own 'dead' or 'expired' event (includes/end_dead.lua)
        if back then emit_event('retried', id, topic, r.attempts, why, now) end
        if back then moved[#moved + 1] = id else dead[#dead + 1] = id end
      end
    end
  end
end
local next_cursor = '0-0'
if last and last ~= rows[#rows][1] then next_cursor = last -- stopped by the byte budget
elseif #rows >= count then next_cursor = rows[#rows][1] end
return {next_cursor, moved, dead, cleaned, now, since}
