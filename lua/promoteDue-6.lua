#!lua
-- promoteDue-6: move due jobs, earliest first, from the delayed set into their topic streams.
-- KEYS: the six partition keys (includes/keys.lua); writes PREFIX..'t:'..topic (derived, same tag).
-- ARGV[1] batch limit (bounded so one call stays around a millisecond); a batch also stops
-- before its records pass MAX_BATCH_BYTES (1 MiB), always after at least one job.
-- ARGV[2] (optional) schedule lead ms: when given, a 6th value reports when the earliest active
-- schedule wants firing (its next tick minus the lead, epoch ms; -1 when none), see
-- docs/schedules.md: one ZRANGE of a key that is usually empty.
-- Returns {moved, next_due_ms or -1, now_ms, dropped, now_us[, schedule_at]}: next_due is the new head of the
-- delayed set (or, when sooner, when the tombstone sweep wants to run again: now while expired
-- tombstones are left, else the next expiry but not before a second from now) and now_us the same server clock reading as now_ms in epoch microseconds, so the
-- caller sleeps (next_due * 1000 - now_us) µs by its own monotonic clock. dropped lists
-- {id, reason} pairs of due ids that were not promoted: no record, a malformed record (left in
-- the jobs hash for get/cancel), a topic key that is not a stream (the job goes dead instead),
-- or, when its dead-letter key is not a stream either, a job left delayed and tried again in 60 s.
-- A job leaves the delayed set only once its new place is written: any other XADD error stops
-- the batch there (what came before it is kept); when it is the first job the call fails with
-- 'SDERR PROMOTE_FAILED <key> <error>' and writes nothing. Flags: may write, so Redis refuses
-- the call whole under maxmemory (docs/operations.md).
-- Also forgets up to 500 expired keep_done tombstones (the periodic sweep, see next_due; no read
-- of them on a partition without a done set), and,
-- when the queue keeps dead letters for a bounded time or count (fields 'dead_ttl' ms and
-- 'dead_max' of PREFIX..'meta', read in the same HMGET as the layout), up to 100 dead jobs older
-- than dead_ttl or beyond the newest dead_max of their topic, oldest first, each listed in
-- dropped with the reason 'purged <topic>' and written as a 'purged' event; next_due then also
-- covers the next dead letter to age out, at most once a second (docs/reliability.md#dead-letter-retention).
-- Stream entry fields: 'id' job id, 'rec' the job record as it was when delayed.
-- Staged topics (PREFIX..'staged', docs/priorities.md): a due job of a staged topic is not
-- XADDed: its record becomes 'r' (ready, entry empty, whole) and it joins its key's lane
-- (includes/staging.lua), ranked by due time and priority; one element is pushed on the topic's
-- stagewake list per call. A queue without staged topics, job options or checkpoints pays one
-- EXISTS (of the three keys) per call with due jobs.
-- Layout (docs/keys.md#layouts): field 'layout' of PREFIX..'meta' (read once per call). Absent or
-- '1': the jobs hash gets the full record in state s (what a version 1 process reads). '2': it
-- gets the header only (the record up to its 8th '|', empty blob), so the body is kept once,
-- in the stream entry; scripts that take a job out of its stream fetch it back (full_record).
-- Errors: 'SDERR WRONG_TYPE <key> <type>' (a KEYS key of another type; nothing written),
-- 'SDERR LAYOUT <meta key> <layout>' (a layout this script does not know; nothing written).
-- Retry-safe: a job moves once; a repeated call finds it gone from the delayed set.
-- Events (docs/events.md): 'promoted' (detail: the stream entry id), 'dead' for a job whose topic
--  key is not a stream, 'expired' for a job past its deadline, when the queue keeps events.
-- Expiry (docs/expiry.md, includes/expired.lua): a due job whose deadline (PREFIX..'opts', the
-- one EXISTS above when the queue never used job options) has passed on the server clock is not
-- promoted: it goes to its topic's dead letters with error 'expired' and is listed in dropped
-- with the reason 'expired <topic>'. A job with a deadline still ahead is promoted with a third
-- entry field 'x', its deadline (epoch ms), which the consumers' open step checks against the
-- server clock (TIME read in the same round trip as the read).
-- A job that goes dead here (expired, or its topic key not a stream) ends like any dead job
-- (includes/end_dead.lua): its result kept for its envelope's keep_result and its waiters woken;
-- workflows (docs/workflows.md): it tells its waiters (a child goes dead with 'parent failed:
-- <id>', a batch counts it dead), after the batch's own writes.
-- @include server_time
-- @include keys
-- @include read_records
-- @include write_many
-- @include purge_done
-- @include build_record
-- @include parse_record
-- @include emit_event

-- The helpers of staged topics (includes/staging.lua) and of dead ends and deadlines
-- (includes/end_dead.lua, includes/expired.lua, with the workflow helpers they tell) are built
-- only in a call that needs them: due jobs on a partition with staged topics or job options (one
-- EXISTS of the three feature keys, then one each per such call), or a job that goes dead.
-- Built at the top, their closures would cost every call of a plain queue (docs/benchmarks.md,
-- History 2026-11-26 22:36-23:41; docs/keys.md#includes).
local function staging_lib()
-- @include staging
  return {staged_topic = staged_topic, stage = stage, wake_takers = wake_takers,
          flush_tally = flush_tally}
end
local function ends_lib()
-- @include blob_keep
-- @include keep_result
-- @include new_record
-- @include wake_if_head
-- @include dead_result
-- @include flow_keep
-- @include flow
-- @include end_dead
-- @include expired
-- @include drop_opts
-- @include purge_dead_entries
  defer_dead_flow() -- waiters of jobs ended dead are told after the delayed set's removal by rank
  return {deadlines_of = deadlines_of, expire_job = expire_job, end_dead = end_dead,
          flush = flush_dead_flow, EXPIRED = EXPIRED, purge_dead = purge_dead_entries}
end
local ENDS = nil -- ends_lib(), once built in this call
local function ends()
  if not ENDS then ENDS = ends_lib() end
  return ENDS
end

local MAX_BATCH_BYTES = 1048576
local RETRY_LATER_MS = 60000
local SWEEP, SWEEP_EVERY_MS = 500, 1000
local RETAIN, RETAIN_EVERY_MS = 100, 1000 -- dead-letter retention: jobs per call, least interval
local now, now_us = server_time()
local limit = tonumber(ARGV[1])
local has_done = check_partition_keys() -- false: no tombstones to sweep (none are made here)
if ARGV[2] then refuse_wrong_type(PREFIX .. 'sched:next', 'zset') end
refuse_wrong_type(PREFIX .. 'meta', 'hash')
local meta = redis.call('HMGET', PREFIX .. 'meta', 'layout', 'dead_ttl', 'dead_max', 'events')
local layout = meta[1]
-- dead-letter retention (absent or not a positive number: dead jobs are kept, as before)
local dead_ttl, dead_max = tonumber(meta[2] or ''), tonumber(meta[3] or '')
if dead_ttl and dead_ttl <= 0 then dead_ttl = nil end
if dead_max and dead_max <= 0 then dead_max = nil end
if layout and layout ~= '1' and layout ~= '2' then -- a newer release's: never written blind
  error({err = 'SDERR LAYOUT ' .. PREFIX .. 'meta ' .. layout})
end
local header_only = layout == '2'
events_set(meta[4]) -- the events switch, read with the layout (includes/emit_event.lua)
local function wrong_type(reply)
  return type(reply) == 'table' and reply.err and string.find(reply.err, 'WRONGTYPE', 1, true)
end
local ids = redis.call('ZRANGEBYSCORE', K_DELAYED, '-inf', now, 'LIMIT', 0, limit)
events_batch() -- the call's events share entries (docs/events.md#entries)
local n = #ids
local moved = 0
local dropped = {}
if n > 0 then
  -- job options, staged topics, checkpoints: one EXISTS of the three keys on a plain queue
  local X, S, CK = nil, nil, nil
  if redis.call('EXISTS', K_OPTS, K_STAGED, PREFIX .. 'ck') > 0 then
    X = redis.call('EXISTS', K_OPTS) == 1 and ends() or nil -- any job options here?
    S = redis.call('EXISTS', K_STAGED) == 1 and staging_lib() or nil -- any staged topic?
    -- checkpoints (PREFIX..'ck', docs/keys.md#checkpoints): a foreign value there is ignored,
    -- never a failed batch
    CK = redis.call('TYPE', PREFIX .. 'ck').ok == 'hash' and PREFIX .. 'ck' or nil
  end
  local ev = events_on() -- read once: 'promoted' is collected, then written as runs
  -- the promoted jobs and their details, and the runs found on the way (a change of topic or
  -- attempts closes one): each run's last event, topic and attempts
  -- (built only when the queue keeps events)
  local p_ids, p_details, np, b_last, b_topic, b_att, nb, promoted = nil, nil, 0, nil, nil, nil, 0
  if ev then
    p_ids, p_details, b_last, b_topic, b_att = {}, {}, {}, {}, {}
    promoted = function(id, topic, mid, detail)
      -- attempts, the first number of mid: '0' for a job not yet run, without a pattern match
      local attempts = (string.byte(mid, 3) == 124 and string.byte(mid, 2) == 48) and '0'
                       or string.match(mid, '^|(%d+)')
      np = np + 1
      p_ids[np], p_details[np] = id, detail
      if nb == 0 or topic ~= b_topic[nb] or attempts ~= b_att[nb] then
        nb = nb + 1
        b_topic[nb], b_att[nb] = topic, attempts
      end
      b_last[nb] = np
    end
  end
  local deadlines = X and X.deadlines_of(ids, n) -- nil on a queue without job options
  local writes, nw = {}, 0 -- id, new record pairs: one HSET for the batch
  local left = 0 -- jobs whose new place is written (or that have none to have)
  local later = {} -- score, id pairs: jobs that can go nowhere now
  local per_topic = {}
  local streams = {}
  -- the plain path's topic run: its stream key and how many it promoted, counted into
  -- per_topic when the topic changes (consecutive due jobs mostly share a topic)
  local run_topic, run_sk, run_n = nil, nil, 0
  local bytes = 0
  local failed = nil
  local staged = {} -- {id, topic, due}: jobs of staged topics, staged after the batch is written
  -- looked up once, not per job
  local match, find, sub, rpcall = string.match, string.find, string.sub, redis.pcall
  -- the header (up to the topic's closing '|') that the records before shared, and its parts:
  -- the jobs of one enqueue call share due, created, ttr, max and topic, and a record that
  -- starts with those bytes has those parts (the pattern below looks at nothing past them),
  -- found with one plain find (no string made) instead of a match whose captures are strings
  -- made anew each job (Redis's Lua hashes every byte of every string it makes)
  local hdr, h_mid, h_rest, h_topic = nil, nil, nil, nil
  -- the records are read as the loop reaches them, in read_records' growing steps
  -- (records_step), none past the byte budget (a batch of large records never copies much more
  -- than the budget into the script), each step's reply used as it is (part: the records of
  -- ids[at + 1 .. upto]) instead of copied into one list
  local part, at, upto, step = nil, 0, 0, 1
  for i = 1, n do
    if i > upto then
      if bytes > MAX_BATCH_BYTES then break end
      at = upto
      part, upto, step = records_step(ids, i, step)
    end
    local id, raw = ids[i], part[i - at]
    -- a delayed record (the shape parse_record accepts, in state d): the parts kept around its
    -- state and entry, byte for byte (mid: the 5 numbers; from rest_at: '|', the topic, '|',
    -- the blob: one piece, one string.sub). [0-9], not %d: the same bytes, matched without a C
    -- library call per byte (docs/benchmarks.md, History)
    local mid, rest_at, topic
    if raw then
      local size = #raw
      if i > 1 and bytes + size > MAX_BATCH_BYTES then break end
      bytes = bytes + size
      if hdr and find(raw, hdr, 1, true) == 1 then
        mid, rest_at, topic = h_mid, h_rest, h_topic
      else
        mid, rest_at, topic = match(raw,
          '^d(|[0-9]+|[0-9]+|[0-9]+|[0-9]+|[0-9]+|)[0-9-]*()|([^|]+)|')
        -- the same parts twice in a row: this record's header is kept for the next ones
        -- (one string.sub per run; a batch whose headers all differ pays a comparison or
        -- three a job, and a find only after two records in a row shared their parts)
        if mid and mid == h_mid and rest_at == h_rest and topic == h_topic then
          hdr = sub(raw, 1, rest_at + #topic + 1)
        else
          hdr, h_mid, h_rest, h_topic = nil, mid, rest_at, topic
        end
      end
    end
    local deadline = mid and deadlines and deadlines[i]
    if deadline and now >= deadline then -- expired while delayed: never runs
      local r = parse_record(raw)
      if X.expire_job(id, r, now) then
        left = left + 1
        per_topic[topic] = (per_topic[topic] or 0) + 1
        dropped[#dropped + 1] = {id, X.EXPIRED .. ' ' .. topic}
      else
        later[#later + 1] = now + RETRY_LATER_MS
        later[#later + 1] = id
        dropped[#dropped + 1] = {id, 'expired, but its dead-letter key ' .. dead_key(topic) ..
                                     ' is not a stream: tried again in 60 s'}
      end
    elseif mid and S and S.staged_topic(topic) then
      writes[nw + 1] = id
      writes[nw + 2] = 'r' .. mid .. string.sub(raw, rest_at)
      nw = nw + 2
      left = left + 1
      per_topic[topic] = (per_topic[topic] or 0) + 1
      moved = moved + 1
      local due = match(mid, '^|%d+|(%d+)|')
      staged[#staged + 1] = {id, topic, tonumber(due)}
      if ev then promoted(id, topic, mid, 'ready') end
    elseif mid then
      if topic ~= run_topic then
        if run_n > 0 then per_topic[run_topic] = (per_topic[run_topic] or 0) + run_n end
        run_topic, run_n = topic, 0
        run_sk = streams[topic]
        if not run_sk then run_sk = stream_key(topic); streams[topic] = run_sk end
      end
      local sk = run_sk
      -- pcall: a foreign client may have put another type of value at the topic's key; that job
      -- goes dead with the reason instead of aborting the batch for every other job
      local entry
      -- a checkpoint of an earlier run rides in field 'c' (docs/worker.md#checkpoints)
      local ck = CK and redis.call('HGET', CK, id)
      if ck then entry = deadline and rpcall('XADD', sk, '*', 'id', id, 'rec', raw, 'x', deadline, 'c', ck)
                         or rpcall('XADD', sk, '*', 'id', id, 'rec', raw, 'c', ck)
      elseif deadline then entry = rpcall('XADD', sk, '*', 'id', id, 'rec', raw, 'x', deadline)
      else entry = rpcall('XADD', sk, '*', 'id', id, 'rec', raw) end
      -- the reply is the entry id (a string: its 'err' is string.err, which does not exist),
      -- or a table holding the error in err; type() would be a C call per job making its
      -- answer a string
      if not entry.err then
        writes[nw + 1] = id
        -- layout 2: the header only, up to and with the 8th '|' (the blob is not copied)
        if header_only then
          writes[nw + 2] = 's' .. mid .. entry .. '|' .. topic .. '|'
        else
          writes[nw + 2] = 's' .. mid .. entry .. sub(raw, rest_at)
        end
        nw = nw + 2
        left = left + 1
        run_n = run_n + 1
        moved = moved + 1
        if ev then promoted(id, topic, mid, entry) end
      elseif not wrong_type(entry) then
        failed = sk .. ' ' .. tostring(entry.err)
        break
      else
        local why = 'topic key ' .. sk .. ' is not a stream: ' .. tostring(entry.err)
        local dead, err = ends().end_dead(id, parse_record(raw), why, now, nil) -- end_dead.lua
        if dead then
          left = left + 1
          per_topic[topic] = (per_topic[topic] or 0) + 1
        elseif wrong_type(err) then
          why = why .. '; its dead-letter key is not a stream either: tried again in 60 s'
          later[#later + 1] = now + RETRY_LATER_MS
          later[#later + 1] = id
        else
          failed = dead_key(topic) .. ' ' .. tostring(err.err)
          break
        end
        dropped[#dropped + 1] = {id, why}
      end
    else
      left = left + 1
      if not raw then
        dropped[#dropped + 1] = {id, 'no job record'}
      elseif not parse_record(raw) then
        dropped[#dropped + 1] = {id, 'malformed job record'}
      end
    end
  end
  if run_n > 0 then per_topic[run_topic] = (per_topic[run_topic] or 0) + run_n end
  -- after the call's other events (dead, expired: other jobs, the same time): runs of
  -- events that share topic and attempts, one table.concat each (includes/emit_event.lua)
  local first = 1
  for b = 1, nb do
    events_run('promoted', b_topic[b], b_att[b], now, p_ids, p_details, first, b_last[b])
    first = b_last[b] + 1
  end
  if failed and left == 0 and #later == 0 then
    events_flush()
    return redis.error_reply('SDERR PROMOTE_FAILED ' .. failed)
  end
  if nw > 0 then write_many('HSET', K_JOBS, writes) end
  if S then
    local woken = {}
    for _, job in ipairs(staged) do
      S.stage(job[1], job[2], job[3])
      if not woken[job[2]] then woken[job[2]] = true; S.wake_takers(job[2]) end
    end
    S.flush_tally()
  end
  -- the jobs looked at are the head of the delayed set, ranks 0..k-1 in the order read (nothing
  -- wrote to it since): one range removal walks the skiplist once instead of once per job, which
  -- keeps the cost per job flat as the backlog grows (docs/benchmarks.md)
  local looked_at = left + #later / 2
  if looked_at > 0 then redis.call('ZREMRANGEBYRANK', K_DELAYED, 0, looked_at - 1) end
  if #later > 0 then write_many('ZADD', K_DELAYED, later) end
  for topic, count in pairs(per_topic) do redis.call('HINCRBY', K_COUNTS, topic, -count) end
  if ENDS then ENDS.flush(now) end -- docs/workflows.md: a released child may join the delayed set now
end
-- dead-letter retention: a bounded batch per call, oldest first per topic (the topics are the
-- counts hash's fields, as the dead list reads them); retain_at: when it wants to run again
local retain_more, retain_at = false, nil
if dead_ttl or dead_max then
  local left = RETAIN
  for _, topic in ipairs(redis.call('HKEYS', K_COUNTS)) do
    if left <= 0 then retain_more = true; break end
    local dk, victims = dead_key(topic), {}
    if dead_max then
      local len = redis.pcall('XLEN', dk) -- a foreign value at the key: the topic is skipped
      if type(len) == 'number' and len > dead_max then
        victims = redis.call('XRANGE', dk, '-', '+', 'COUNT', math.min(len - dead_max, left))
        if len - dead_max > left then retain_more = true end
      end
    end
    if dead_ttl then
      local old = redis.pcall('XRANGE', dk, '-', string.format('%d', now - dead_ttl), 'COUNT', left)
      if type(old) == 'table' and not old.err then
        if #old >= left then retain_more = true end
        if #old > #victims then victims = old end -- both are the stream's oldest entries
      end
    end
    if #victims > 0 then
      ends().purge_dead(topic, victims, now, dropped)
      left = left - #victims
    end
    if dead_ttl then -- the next entry to age out
      local head = redis.pcall('XRANGE', dk, '-', '+', 'COUNT', 1)
      if type(head) == 'table' and head[1] then
        local at = tonumber(string.match(head[1][1], '^(%d+)')) + dead_ttl
        if not retain_at or at < retain_at then retain_at = at end
      end
    end
  end
  -- a dead_max surplus appears when a job dies elsewhere: looked at once a second
  if dead_max and (not retain_at or retain_at > now + RETAIN_EVERY_MS) then
    retain_at = now + RETAIN_EVERY_MS
  end
  if retain_more then retain_at = now
  elseif retain_at then retain_at = math.max(retain_at, now + RETAIN_EVERY_MS) end
end
events_flush()
local more = has_done and purge_done(now, SWEEP)
local head = redis.call('ZRANGE', K_DELAYED, 0, 0, 'WITHSCORES')
local next_due = -1
if head[2] then next_due = math.ceil(tonumber(head[2])) end -- the first ms it is due in
-- the sweep: call again at once while expired tombstones are left, else when the next one
-- expires, but at most once a second for them
local sweep_at = nil
if more then sweep_at = now
elseif has_done then
  local first = redis.call('ZRANGE', K_DONE, 0, 0, 'WITHSCORES')
  if first[2] then sweep_at = math.max(math.ceil(tonumber(first[2])), now + SWEEP_EVERY_MS) end
end
if sweep_at and (next_due < 0 or sweep_at < next_due) then next_due = sweep_at end
if retain_at and (next_due < 0 or retain_at < next_due) then next_due = retain_at end
if ARGV[2] then
  local sched = redis.call('ZRANGE', PREFIX .. 'sched:next', 0, 0, 'WITHSCORES')
  local sched_at = -1
  if sched[2] then sched_at = tonumber(sched[2]) - tonumber(ARGV[2]) end
  return {moved, next_due, now, dropped, now_us, sched_at}
end
return {moved, next_due, now, dropped, now_us}
