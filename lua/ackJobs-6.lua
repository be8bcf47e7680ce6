#!lua flags=allow-oom
-- ackJobs-6: settle a batch of successfully handled deliveries, keeping their results; the time
-- each was read, when the caller knows it, dates its 'started' event.
-- KEYS: the six partition keys (includes/keys.lua); touches PREFIX..'t:'..topic, and for a kept
-- result PREFIX..'r:'..id and PREFIX..'w:'..id (includes/keep_result.lua).
-- ARGV[1] group, ARGV[2] keep_done ms (0: forget the job; > 0: keep a 'c' tombstone that long),
-- ARGV[3] N, the number of deliveries, then 3 values per delivery: topic, job id, stream entry
-- id; then the read times, as runs: R, then R pairs (count >= 1, read time), the counts
-- summing to N (R = 0: none given, the plain call), count deliveries in a row sharing one time
-- (those of one read do). A read time (epoch ms, server clock; 0 unknown) is when a consumer
-- read the delivery fresh, with no heartbeat sent for it since: it lets 'started' be written
-- without reading the pending list (docs/events.md#started); then 3 values per kept result: the
-- delivery's position (1..N), keep_result ms, the result (a format letter and the encoded value).
-- Returns the number of deliveries that were still current (a cancelled, replaced or reclaimed
-- job's stale delivery is acknowledged in the stream but leaves the job alone, except that a job
-- held behind it, rescheduled or replaced while it ran, is freed: includes/hold.lua).
-- A job that ended drops its options (PREFIX..'opts', includes/drop_opts.lua: one EXISTS when the
-- partition has none).
-- Also forgets expired tombstones: at least as many as the call could create, plus 100.
-- Batched: one XACK and one XDEL per topic, one HMGET of every record, one HDEL (or HSET and
-- ZADD for tombstones) for the batch; a job named twice settles once, as one call per delivery
-- would.
-- Errors: 'SDERR WRONG_TYPE <key> <type>' (checked before any write).
-- Flags: allow-oom, as it frees memory (a tombstone is a record the call already had).
-- Retry-safe: a repeated call finds nothing current and returns 0.
-- Layout 2: with keep_done, a header-only record (docs/keys.md#layouts) gets its blob from its
-- stream entry before the entry is deleted, so the tombstone keeps the body as in layout 1; a
-- call without keep_done reads no entry.
-- Events (docs/events.md): 'started' (at its read time when given, else when no heartbeat
--  reported it) and 'succeeded' per current delivery, when the queue keeps events.
-- Workflows (docs/workflows.md): on a partition that keeps outcomes, each job settled keeps its
-- outcome and tells its waiters (includes/flow.lua). The events and workflow switches are read
-- with one HMGET per call (includes/read_switches.lua).
-- @include server_time
-- @include keys
-- @include release_lease
-- @include read_records
-- @include write_many
-- @include purge_done
-- @include hmget_many
-- @include emit_event
-- @include drop_opts
-- @include flow_keep
-- @include read_switches

-- ends_lib(): the helpers of what a plain ack does not do (tombstones with keep_done, kept results,
-- a held job freed, 'started' events, workflows: includes/parse_record.lua, build_record.lua,
-- full_record.lua, keep_result.lua, hold.lua, emit_started.lua, flow.lua), built on the first
-- use in a call: built at the top, their closures cost every call of a plain queue
-- (docs/benchmarks.md, History 2026-11-26 22:36-23:41 and 2026-11-29)
local ENDS = nil
local function ends_lib()
  if ENDS then return ENDS end
-- @include build_record
-- @include parse_record
-- @include full_record
-- @include keep_result
-- @include wake_if_head
-- @include hold
-- @include emit_started
-- @include new_record
-- @include blob_keep
-- @include dead_result
-- @include flow
  ENDS = {parse_record = parse_record, build_record = build_record, full_record = full_record,
          keep_result = keep_result, release_hold = release_hold,
          started_prefetch = started_prefetch, started_at = started_at, flow_ended = flow_ended}
  return ENDS
end

local ARGV = ARGV -- a local: read several times per delivery (a global is a table lookup each)
-- the server clock (ms), read only when the call needs it (events, tombstones, kept results,
-- workflows, expired tombstones to purge): a plain call on a partition without tombstones
-- reads none
local now = 0
local group, keep = ARGV[1], tonumber(ARGV[2])
local n = tonumber(ARGV[3]) or 0
local last = 3 + 3 * n -- the last ARGV of the deliveries; (read times, then) results follow
local runs = tonumber(ARGV[last + 1]) -- how many runs of read times (0: none given)
local reads = runs and 1 + 2 * runs or 0 -- how many ARGV they take
local read_ms = {} -- k -> the read time of run k (a number; 0 unknown)
local read_n = {} -- k -> the last delivery (1..N) of run k
local bad = n < 0 or runs == nil or runs < 0 or runs % 1 ~= 0 or 3 + 3 * n + reads > #ARGV
            or (#ARGV - 3 - 3 * n - reads) % 3 ~= 0
if not bad then
  local upto = 0
  for k = 1, runs do
    local count, ms = tonumber(ARGV[last + 2 * k]), tonumber(ARGV[last + 2 * k + 1])
    if not (count and ms) or count < 1 or count % 1 ~= 0 then bad = true break end
    upto = upto + count
    read_n[k], read_ms[k] = upto, ms
  end
  bad = bad or (runs > 0 and upto ~= n)
end
if bad then
  error({err = 'SDERR BAD_ARGS ackJobs: N does not match the values'})
end
local results = {} -- delivery position -> {keep ms, result}
for b = last + reads + 1, #ARGV, 3 do results[tonumber(ARGV[b])] = {tonumber(ARGV[b + 1]), ARGV[b + 2]} end
local settled = 0
-- the partition keys are refused (WRONG_TYPE) before the first write when the call may write
-- them (docs/keys.md): done always (its existence says whether expired tombstones may be
-- purged), jobs by its HMGET (or by TYPE), delayed, wake, counts and groups only when a held job
-- is freed or a workflow is told (end_keys): a plain call pays 3 TYPE calls, not 8
local tombstones = refuse_wrong_type(K_DONE, 'zset') ~= 'none' -- expired ones may be purged
local held = false -- a held job's delivery is settled: release_hold writes delayed and wake
local function end_keys()
  if held or (n > 0 and flow_keep() > 0) then
    refuse_wrong_type(K_DELAYED, 'zset'); refuse_wrong_type(K_WAKE, 'zset')
    refuse_wrong_type(K_COUNTS, 'hash'); refuse_wrong_type(K_GROUPS, 'hash')
  end
end
local by_topic, topics, ids = {}, {}, {}
local keyed = {} -- topic -> true when a job id of it has a fairness key (release_lease)
local byte, find = string.byte, string.find
-- the deliveries of one read share a topic: its list is looked up when the topic changes
local topic_now, eids, ne = nil, nil, 0
for b = 4, last, 3 do
  local topic = ARGV[b]
  if topic ~= topic_now then
    eids = by_topic[topic]
    if not eids then
      refuse_wrong_type(stream_key(topic), 'stream')
      check_lease_keys(topic)
      eids = {}
      by_topic[topic] = eids
      topics[#topics + 1] = topic
    end
    topic_now, ne = topic, #eids
  end
  ne = ne + 1
  eids[ne] = ARGV[b + 2]
  ids[(b - 1) / 3] = ARGV[b + 1]
end
-- a job id with a fairness key ('{key}rest') has its key lease freed (release_lease): one
-- search of all the ids finds whether any may have one, instead of a look at each
if n > 0 and find(table.concat(ids), '{', 1, true) then
  for i = 1, n do
    local id = ids[i]
    if byte(id, 1) == 123 then
      local topic = ARGV[3 * i + 1]
      by_topic[topic][ARGV[3 * i + 3]] = id
      keyed[topic] = true
    end
  end
end
local raws = {}
local whole = {} -- keep_done: header-only records made whole, read before their entry goes
if n > 0 and n <= 1000 then -- one HMGET, whose refusal names the key as TYPE would
  raws = redis.pcall('HMGET', K_JOBS, unpack(ids))
  if raws.err then
    refuse_wrong_type(K_JOBS, 'hash')
    error(raws)
  end
else
  refuse_wrong_type(K_JOBS, 'hash')
  if n > 0 then raws = hmget_many(K_JOBS, ids) end
end
if n > 0 then
  read_switches() -- events and flow: one HMGET
end
if keep > 0 then
  for i = 1, #ids do
    local r = ends_lib().parse_record(raws[i])
    if r and r.state == 's' and r.entry == ARGV[3 * i + 3] and r.blob == ''
       and ends_lib().full_record(r) then
      whole[i] = raws[i] .. r.blob
    end
  end
end
if tombstones or keep > 0 or next(results) or (#ids > 0 and (events_on() or flow_keep() > 0)) then
  now = server_time() -- read_switches read both switches: no call here
end
events_batch() -- the call's events share entries (docs/events.md#entries)
-- events on: each record is parsed here, once (its state, attempts and entry serve 'started',
-- the loop below and 'succeeded'), and 'started' is dated before XACK drops the pending entries
local heads = nil -- i -> the attempt that ran (a current delivery), false (a held job's delivery)
if #ids > 0 and events_on() then
  heads = {}
  local dated = runs > 0 -- every delivery has its read time: no pending list to read
  for k = 1, runs do
    if read_ms[k] <= 0 then dated = false break end
  end
  if not dated then ends_lib().started_prefetch(group, by_topic) end
  local seen, s_ids = {}, {} -- s_ids: the jobs 'started' reports, in order
  -- the runs are found on the way (a change of topic, attempt or time closes one): b_* hold
  -- each run's last event, topic, attempt and time
  local ns, b_last, b_topic, b_ran, b_at, nb = 0, {}, {}, {}, {}, 0
  local k, upto = 1, read_n[1] or n -- the read run of delivery i, and its last delivery
  for i = 1, #ids do
    if i > upto then k = k + 1 upto = read_n[k] end
    local id, raw = ids[i], raws[i]
    if raw and not seen[id] then
      local state, attempts, entry = string.match(raw, '^([dsxc])|(%d+)|%d+|%d+|%d+|%d+|([%d%-]*)|[^|]+|')
      local eid = ARGV[3 * i + 3]
      if state == 's' and entry == eid then
        seen[id] = true -- a job named twice settles once, by its current delivery
        local ran, topic = attempts == '0' and 1 or tonumber(attempts) + 1, ARGV[3 * i + 1]
        heads[i] = ran
        local at = read_ms[k] or 0
        if at <= 0 then at = ends_lib().started_at(group, topic, eid, now) end
        if at then
          ns = ns + 1
          s_ids[ns] = id
          if nb == 0 or topic ~= b_topic[nb] or ran ~= b_ran[nb] or at ~= b_at[nb] then
            nb = nb + 1
            b_topic[nb], b_ran[nb], b_at[nb] = topic, ran, at
          end
          b_last[nb] = ns
        end
      elseif state == 'd' and entry == eid then
        heads[i] = false
        held = true
      end
    end
  end
  end_keys() -- before the first write ('started' events included)
  local first = 1
  for b = 1, nb do
    events_run('started', b_topic[b], b_ran[b], b_at[b], s_ids, nil, first, b_last[b])
    first = b_last[b] + 1
  end
end
-- events off: which deliveries are current, found before the first write (a held job's
-- delivery writes keys refused first): st[i] false (stale) or 'd' (a held job's), nil when
-- current ('s': no store on the plain path)
local st = {}
-- cur: the current deliveries' job ids in order, found on the way: when nothing but their
-- HDEL is left to do (the plain call, below), the settle loop is not run
local cur, ncur = {}, 0
if not heads then
  for i = 1, n do
    local raw, eid, s = raws[i], ARGV[3 * i + 3], false
    -- without a pattern (a match of the header costs per delivery): the stream entry id
    -- eid ('<ms>-<seq>') is the record's entry field when its first occurrence in the record
    -- lies between two '|' and holds the record's first '-' (the fields before the entry
    -- are a state letter and digits: parse_record); a stale delivery's eid is mostly not
    -- in the record at all: one search
    local p = raw and find(raw, eid, 3, true)
    if p then
      local e, d = p + #eid, find(raw, '-', 3, true)
      local c, bar = byte(raw, 1, 2)
      if d and d >= p and d < e and bar == 124 and byte(raw, p - 1) == 124
         and byte(raw, e) == 124 then
        if c == 115 then s = nil elseif c == 100 then s = 'd'; held = true end
      end
    end
    if s ~= nil then st[i] = s else ncur = ncur + 1; cur[ncur] = ids[i] end
  end
  end_keys()
end
local STEP = 1000
local deleted = 0 -- entries XDEL deleted: n with one topic when no entry id was named twice
for _, topic in ipairs(topics) do
  local sk, eids = stream_key(topic), by_topic[topic]
  for s = 1, #eids, STEP do
    local e = math.min(s + STEP - 1, #eids)
    redis.call('XACK', sk, group, unpack(eids, s, e))
    deleted = deleted + redis.call('XDEL', sk, unpack(eids, s, e))
  end
  -- a plain topic (no leases, no keyed job) has nothing to release: no call per delivery
  if keyed[topic] or lease_topics[topic] ~= false then
    for _, eid in ipairs(eids) do release_lease(topic, eid, eids[eid]) end
  end
end
if #ids > 0 then
  -- ended: the jobs settled, also the records to delete (HDEL) without keep_done
  local kept, stones, ended, nended = {}, {}, {}, 0
  -- a job named twice settles once, by its current delivery: done holds the jobs settled,
  -- unless no job can be: with one topic whose XDEL deleted every entry named, no entry id
  -- was named twice, so no record's entry matched two deliveries (a set costs per delivery)
  local done = (#topics > 1 or deleted < n) and {} or nil
  -- the plain call (events off, no keep_done, no result, no held job, no entry named twice):
  -- the jobs settled are cur, as the loop below would find them
  local plain = not heads and not done and not held and not (keep > 0) and next(results) == nil
  -- 'succeeded' of the jobs in ended (events on), in runs found on the way (as 'started')
  local e_first, e_topic, e_ran = 1, nil, nil
  if plain then ended, nended, settled = cur, ncur, ncur end
  for i = 1, plain and 0 or #ids do
    local id, eid = ids[i], ARGV[3 * i + 3]
    -- only the state and the entry are looked at (no copy of the blob); see parse_record
    local state = nil -- 's' or 'd' when eid is the record's entry
    if heads then -- parsed above: a number (the attempt that ran) for a current delivery
      local ran = heads[i]
      if ran then state = 's' elseif ran == false then state = 'd' end
    else -- found before the first write (st); a job named twice settles once
      state = st[i]
      if state == nil then state = 's' elseif state == false then state = nil end
      if done and done[id] then state = nil end
    end
    if state == 's' then
      if done then done[id] = true end
      nended = nended + 1
      ended[nended] = id
      if heads then
        local topic, ran = ARGV[3 * i + 1], heads[i]
        if topic ~= e_topic or ran ~= e_ran then
          events_run('succeeded', e_topic, e_ran, now, ended, nil, e_first, nended - 1)
          e_first, e_topic, e_ran = nended, topic, ran
        end
      end
      if keep > 0 then
        local r = ends_lib().parse_record(whole[i] or raws[i])
        r.state, r.entry = 'c', ''
        kept[#kept + 1] = id
        kept[#kept + 1] = ends_lib().build_record(r)
        stones[#stones + 1] = now + keep
        stones[#stones + 1] = id
      end
      settled = settled + 1
      local kept_result = results[i]
      if kept_result then ends_lib().keep_result(id, 's', now, kept_result[1], kept_result[2]) end
    elseif state == 'd' then -- its job was rescheduled while it ran: now free
      ends_lib().release_hold(id, eid)
    end
  end
  if heads then events_run('succeeded', e_topic, e_ran, now, ended, nil, e_first, nended) end
  if nended > 0 and not (keep > 0) then write_many('HDEL', K_JOBS, ended) end
  drop_opts(ended)
  if #kept > 0 then
    write_many('HSET', K_JOBS, kept)
    write_many('ZADD', K_DONE, stones)
  end
  if nended > 0 and flow_keep() > 0 then
    local tell_waiters = ends_lib().flow_ended -- what includes/flow.lua tells a job's waiters with
    for _, id in ipairs(ended) do tell_waiters(id, 's', now) end
  end
end
events_flush()
if tombstones then purge_done(now, n + 100) end
return settled
