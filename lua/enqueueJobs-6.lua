#!lua
-- enqueueJobs-6: add a bounded batch of jobs to the delayed set, idempotent by job id.
-- With job options (priority, fairness key, expiry; docs/keys.md#job-options), ARGV[3] '1': a
-- ninth value per job, its options or ''. A job written with options gets its field in
-- PREFIX..'opts' (and, for a priority other than 5 or a key, its topic's flag in
-- PREFIX..'staged'); a job written without (a replace, or an id freed by an expired tombstone)
-- drops the field of the job it replaced. Producers set it for a batch with a job that has
-- options or replaces one; other batches send '0' and pay nothing for options.
-- KEYS: the six partition keys (includes/keys.lua); with options PREFIX..'opts' and
-- PREFIX..'staged' too.
-- ARGV[1]  past tolerance ms for absolute due times
-- ARGV[2]  keep_done ms (> 0: acknowledged ids stay taken as tombstones; used here only to purge:
--          not 0, the call also forgets up to 100 expired tombstones)
-- ARGV[3]  options: '0' (8 values per job) or '1' (9: the job's options last); or '2' (shared:
--          ARGV[4..7] topic, when_kind, ttr_ms, max_attempts of every job of the call, then 3
--          values per job: id, when_ms, blob; no replace, no options)
-- then 8 (or 9) values per job: id, topic, when_kind ('r' relative | 'a' absolute), when_ms,
--                        ttr_ms, max_attempts, replace ('0' | '1' | '1:<max_wait_ms>'), blob,
--                        [opts ('' | '<priority 0-9>|<expires_ms or empty>|<key or empty>')]
-- Shared ('2'): the values Redis makes Lua strings of drop from 8 to 3 per job, and the record's
-- text between the due time and the blob is built once per call (docs/keys.md#enqueue-from-
-- another-language).
-- A plain batch (flag '0' or '2', every replace '0', distinct ids, whole ms: what enqueue_many
-- mostly sends) is checked and built in one pass over its ARGV and, its ids all free, written
-- without the per-job loop (the plain pass below); the keys, records and answers are the same.
-- opts are stored as '<priority>|<due_ms + expires_ms or empty>|<key>' (the deadline on the
-- Redis clock, from the due time the job was written with).
-- replace '1:<max_wait_ms>' (debounce, docs/producer.md#debounce): the due time is at most
-- created + max_wait, where created stays the one of the job replaced while it is delayed (the
-- first enqueue of the series), else the server time of this call.
-- Returns one value per job, in ARGV order: the due time in epoch ms (a number, > 0) when the job
-- was created; else the string '<state>:<due_ms>' of the job now under that id: the existing
-- job's state letter (d, s, x, c; '?' and due 0 for a record that does not parse) and due time
-- when replace is '0', 'd:<new due_ms>' when replace rewrote it. A job replaced while a consumer
-- runs it keeps that delivery and is held behind it (includes/hold.lua): it starts at its due
-- time but not before that delivery has settled or its lease has expired.
-- Shared ('2') and every job created (a new id; every when_ms and due time a whole number of ms
-- within 2^53): one number instead, the created time in ms; each job's due time is its when_ms
-- ('a') or created + when_ms ('r').
-- A relative due time is counted from the server clock in µs and rounded up to the next ms
-- (created_ms too, so that due_ms - created_ms is the delay).
-- Errors: 'SDERR AT_IN_PAST <id>' (nothing written), 'SDERR BAD_ARGS' (a malformed opts value
-- too), 'SDERR WRONG_TYPE <key> <type>' (a key the call would write holds another type, opts and
-- staged included; checked before any write), 'ERR hash
-- value is not an integer: <counts key> <topic>' (a count field holds no integer; checked too).
-- Side effects: HSET jobs, ZADD delayed, HINCRBY counts, ZADD wake when a job becomes the head;
-- with options HSET/HDEL opts, HSET staged.
-- Retry-safe: a repeated call finds the ids and reports them as existing ('d:<due_ms>').
-- Events (docs/events.md): 'enqueued' per job written (detail: the due time, ' replaced' when it
--  replaced one), when the queue keeps events.
-- @include server_time
-- @include keys
-- @include wake_if_head
-- @include hmget_many
-- @include write_many
-- @include due_after
-- @include parse_record
-- @include emit_event

-- lib(): the helpers of what a plain batch of new ids does not do (an id taken: detach, a job
-- held behind its delivery, staged topics; job options; the tombstone purge with keep_done:
-- includes/build_record.lua, staging.lua, detach.lua, hold.lua,
-- read_records.lua, purge_done.lua, opts_arg.lua, drop_opts.lua), built on the first use in a
-- call: built at the top, their closures cost every call (docs/keys.md#includes).
local LIB = nil
local function lib()
  if LIB then return LIB end
-- @include build_record
-- @include staging
-- @include detach
-- @include hold
-- @include read_records
-- @include purge_done
-- @include opts_arg
-- @include drop_opts
  LIB = {detach = detach, hold_of = hold_of, check_hold_keys = check_hold_keys,
         purge_done = purge_done, opts_arg = opts_arg, drop_opts = drop_opts}
  return LIB
end

local ARGV = ARGV -- a local: read several times per job (a global is a table lookup each)
local now, now_us = server_time()
-- created_ms is rounded up like a relative due, so due - created is exactly the delay
local created = due_after(now_us, 0)
local tolerance = tonumber(ARGV[1])
local with_opts, shared = ARGV[3] == '1', ARGV[3] == '2'
-- shared ('2'): topic, when_kind, ttr and max_attempts once for the call (ARGV[4..7]), then
-- id, when_ms, blob per job (s_topic, s_kind: nil otherwise, so 's_topic or ARGV[...]' reads
-- either); o_ms, o_blob: where a job's when_ms and blob are, from its id
local first, per_job, o_ms, o_blob = 4, with_opts and 9 or 8, 3, 7
local s_topic, s_kind = nil, nil
if shared then first, per_job, o_ms, o_blob, s_topic, s_kind = 8, 3, 1, 2, ARGV[4], ARGV[5] end
if (#ARGV - first + 1) % per_job ~= 0 or not tolerance or #ARGV < first - 1
    or not (with_opts or shared or ARGV[3] == '0') then
  return redis.error_reply('SDERR BAD_ARGS')
end
local n = (#ARGV - first + 1) / per_job

-- digits(n): n as text ('%d', as includes/new_record.lua writes it), each value formatted once
-- per call: the jobs of a call mostly share their ttr, max_attempts, created time and often their
-- due time, and a string.format costs more than the rest of a record's text (docs/benchmarks.md#life);
-- text_of(s): the same for a number sent as text (ttr, max_attempts), looked up by that text
local texts, format, by_text = {}, string.format, {}
local function digits(n)
  local t = texts[n]
  if t then return t end
  t = format('%d', n)
  if n == n then texts[n] = t end -- NaN is no table key
  return t
end
local function text_of(s)
  local t = by_text[s]
  if t then return t end
  t = digits(tonumber(s))
  by_text[s] = t
  return t
end

-- one pass over the jobs: their due times (checked before any write), ids and topics
-- (relative: includes/due_after.lua; absolute: as includes/resolve_due.lua decides, in line)
local dues, ids, topics, listed = {}, {}, {}, {}
-- again[i]: job i's id came earlier in the call (its record is read again, once the jobs before
-- it are written)
local seen, again, any_again = {}, {}, false
-- exact: every due time a whole number of ms; whole: every when_ms too (the compact reply)
local floor, exact, whole = math.floor, true, true
if shared and n > 0 then topics[1] = s_topic end

-- The plain pass: a call without options (flag '0' or '2') whose every job has replace '0', a
-- distinct id, a whole number of ms (when_ms and due time, within 2^53) and, with flag '0', a
-- ttr and max_attempts that are numbers, is checked and its records, delayed-set entries and
-- counts built in this one pass, as if every id were free; when the HMGET below finds them all
-- free (the common batch) they are written as they are and the per-job loop further down never
-- runs: one pass over the jobs and their ARGV instead of two, and no per-job answers kept for a
-- shared call. Any other job stops this pass, and the general pass (the loop after it) goes over
-- the call from its first job, exactly as without it; an id found taken sends the call through
-- the per-job loop with the tables of this pass (ids, topics, dues).
local plain_pass = not with_opts and n > 0
local mid = nil -- the shared record text (below)
if shared and plain_pass then
  if tonumber(ARGV[6]) and tonumber(ARGV[7]) then
    mid = '|' .. digits(created) .. '|' .. text_of(ARGV[6]) .. '|' .. text_of(ARGV[7]) .. '||'
          .. s_topic .. '|'
  else plain_pass = false end
end
-- p_records, p_entries: HSET and ZADD values; p_counts: flag '0''s count per topic; p_out: its
-- answers (the due times); p_head_id, p_head_due: the earliest job
local p_records, p_entries, p_counts, p_out = {}, {}, {}, {}
local p_head_id, p_head_due = nil, nil
if plain_pass then
  local past, born_mid = now - tolerance, '|' .. digits(created) .. '|'
  -- the last job's when_kind and when_ms text, and its due time: a job that sends the same (the
  -- jobs of a batch mostly share their delay or time) has the same due time, not worked out again
  -- (lead: a shared call's record text up to its blob, built for a due time a second job has)
  local last_kind, last_ms, due, due_text, lead = nil, nil, nil, nil, nil
  for i = 1, n do
    local b = first + (i - 1) * per_job
    local id, kind, ms_text = ARGV[b], s_kind or ARGV[b + 2], ARGV[b + o_ms]
    if ms_text ~= last_ms or kind ~= last_kind then
      -- the due time as the general pass has it, for a whole number of ms
      local ms = tonumber(ms_text)
      if kind == 'r' then
        if ms % 1 ~= 0 then plain_pass = false; break end
        due = created + ms
      elseif ms < past then return redis.error_reply('SDERR AT_IN_PAST ' .. id)
      else due = ms end
      if due % 1 ~= 0 or due > 9007199254740992 or due < -9007199254740992 then
        plain_pass = false; break
      end
      -- (not kept in texts: a due time that changes from job to job mostly comes once)
      due_text, last_kind, last_ms, lead = texts[due] or format('%d', due), kind, ms_text, nil
    elseif shared and not lead then lead = 'd|0|' .. due_text .. mid
    end
    if seen[id] then plain_pass = false; break end
    seen[id] = true
    ids[i], dues[i - 1] = id, due
    local at = i + i
    if shared then
      p_records[at] = lead and lead .. ARGV[b + 2] or 'd|0|' .. due_text .. mid .. ARGV[b + 2]
    else
      local topic, ttr, max = ARGV[b + 1], ARGV[b + 4], ARGV[b + 5]
      local ttr_text, max_text = by_text[ttr], by_text[max]
      if not ttr_text then
        if not tonumber(ttr) then plain_pass = false; break end
        ttr_text = text_of(ttr)
      end
      if not max_text then
        if not tonumber(max) then plain_pass = false; break end
        max_text = text_of(max)
      end
      if ARGV[b + 6] ~= '0' then plain_pass = false; break end
      p_records[at] = 'd|0|' .. due_text .. born_mid .. ttr_text .. '|' .. max_text .. '||'
                      .. topic .. '|' .. ARGV[b + 7]
      if not listed[topic] then listed[topic] = true; topics[#topics + 1] = topic end
      p_counts[topic] = (p_counts[topic] or 0) + 1
      p_out[i] = due
    end
    p_records[at - 1], p_entries[at - 1], p_entries[at] = id, due_text, id
    if not p_head_due or due < p_head_due then p_head_id, p_head_due = id, due end
  end
  if not plain_pass then -- the general pass, from the first job
    ids, topics, listed, seen, dues = {}, {}, {}, {}, {}
    if shared then topics[1] = s_topic end
  end
end
for i = 0, plain_pass and -1 or n - 1 do
  local b = first + i * per_job
  local kind, ms = s_kind or ARGV[b + 2], tonumber(ARGV[b + o_ms])
  local due
  if kind == 'r' then
    -- a whole number of ms: created + ms, due_after's value exactly (its sum in µs is a float
    -- that rounds past 2^53 µs, a due time after the year 2255); else due_after, in line
    if ms % 1 == 0 then due = created + ms
    else due, whole = floor((now_us + ms * 1000 + 999) / 1000), false end
  elseif ms < now - tolerance then return redis.error_reply('SDERR AT_IN_PAST ' .. ARGV[b])
  else due = ms end
  -- a fraction, inf, NaN or past 2^53: no '%d' text for its score
  if due % 1 ~= 0 or due > 9007199254740992 or due < -9007199254740992 then exact = false end
  dues[i] = due
  local id = ARGV[b]
  ids[i + 1] = id
  if seen[id] then again[i], any_again = true, true else seen[id] = true end
  if not shared then
    local topic = ARGV[b + 1]
    if not listed[topic] then listed[topic] = true; topics[#topics + 1] = topic end
  end
end
-- each job's options, checked before any write: false for none
local options, any_options = {}, false
for i = 0, with_opts and n - 1 or -1 do
  local value = ARGV[4 + i * per_job + 8]
  if value == '' then options[i] = false else
    local p, e, k = lib().opts_arg(value)
    if not p then return redis.error_reply('SDERR BAD_ARGS') end
    options[i] = {p, e, k}
    any_options = true
  end
end

-- One HMGET reads every id; the new records, delayed-set entries and count increments are
-- collected and written with one HSET, one ZADD and one HINCRBY per topic. What is pending is
-- written first when an id comes twice in one call (its record is then read again) and before
-- a job is detached (replace, expired tombstone), so each job sees the ones before it, and a
-- call that fails half-way (foreign garbage) leaves them, exactly as if written one by one.
-- The keys' types, before the first write (docs/keys.md#calling-a-script): delayed and wake are
-- written before anything reads them (TYPE); counts and jobs are read first (HMGET), a refusal
-- of the read naming the key as TYPE would; groups and done matter only to a taken or repeated
-- id and to the tombstone purge, checked then. A plain call pays 2 TYPE calls, not 6.
refuse_wrong_type(K_DELAYED, 'zset'); refuse_wrong_type(K_WAKE, 'zset')
if with_opts then refuse_wrong_type(K_OPTS, 'hash') end
if any_options then refuse_wrong_type(K_STAGED, 'hash') end
local function read_fields(key, fields) -- hmget_many, a key of another type refused by name
  local ok, got = pcall(hmget_many, key, fields)
  if ok then return got end
  refuse_wrong_type(key, 'hash')
  error(got)
end
-- HINCRBY comes after the records are written: a topic's count another client filled with
-- something that is no integer is refused first (one HMGET of the call's topics)
local held = #topics > 0 and read_fields(K_COUNTS, topics) or {}
for j = 1, #topics do
  local v = held[j]
  if v and not (#v <= 20 and string.match(v, '^%-?%d+$')) then
    return redis.error_reply('ERR hash value is not an integer: ' .. K_COUNTS .. ' ' .. topics[j])
  end
end
local olds = n > 0 and read_fields(K_JOBS, ids) or {}
local taken = any_again or tonumber(ARGV[2]) ~= 0 -- groups and done checked below
local any_old = false
-- a job that is replaced (or whose tombstone expired) leaves its stream: checked before any write
for i = 1, n do
  if olds[i] then
    taken, any_old = true, true
    local old = parse_record(olds[i])
    if old then
      if old.state == 's' then refuse_wrong_type(stream_key(old.topic), 'stream') end
      if old.state == 'x' then refuse_wrong_type(dead_key(old.topic), 'stream') end
      -- one a consumer may run is held behind its run, noted in PREFIX holds (includes/hold.lua)
      if old.entry ~= '' and (old.state == 's' or old.state == 'd') then lib().check_hold_keys() end
    end
  end
end
if taken then refuse_wrong_type(K_GROUPS, 'hash'); refuse_wrong_type(K_DONE, 'zset') end
-- a call of no job reads no record above, but its tombstone purge reads and writes the jobs hash
if n == 0 and tonumber(ARGV[2]) ~= 0 then refuse_wrong_type(K_JOBS, 'hash') end
-- a shared call's record text between its due time and its blob, built once (by the plain
-- pass above when it ran; else here, where a ttr or max_attempts that is no number fails)
mid = mid or shared and ('|' .. digits(created) .. '|' .. text_of(ARGV[6]) .. '|'
                         .. text_of(ARGV[7]) .. '||' .. s_topic .. '|')
local records, entries, counts, nr = {}, {}, {}, 0 -- nr: how many of records (and entries)
local new_shared = 0 -- the plain jobs of a shared call pending: its one topic's count
local function flush()
  if nr > 0 then
    write_many('HSET', K_JOBS, records)
    write_many('ZADD', K_DELAYED, entries)
    if new_shared > 0 then counts[s_topic] = (counts[s_topic] or 0) + new_shared end
    for topic, count in pairs(counts) do redis.call('HINCRBY', K_COUNTS, topic, count) end
    records, entries, counts, nr, new_shared = {}, {}, {}, 0, 0
  end
end

events_batch() -- the call's events share entries (docs/events.md#entries)
local ev = events_on() -- read once: a plain queue's jobs then pay no call per job for events
if plain_pass then
  if not any_old then -- every id free: the plain pass's writes, as the loop below would make them
    write_many('HSET', K_JOBS, p_records)
    write_many('ZADD', K_DELAYED, p_entries)
    if shared then redis.call('HINCRBY', K_COUNTS, s_topic, n) else
      for topic, count in pairs(p_counts) do redis.call('HINCRBY', K_COUNTS, topic, count) end
    end
    if ev then -- the detail: the due time's '%d' text, which emit_event makes of the number
      for i = 1, n do
        emit_event('enqueued', ids[i], s_topic or ARGV[first + (i - 1) * per_job + 1], 0,
                   p_entries[i + i - 1], now)
      end
    end
    wake_if_head(p_head_id, p_head_due)
    if tonumber(ARGV[2]) ~= 0 then lib().purge_done(now, 100) end
    events_flush()
    if shared then return created end -- the compact answer (every job created, whole ms)
    return p_out
  end
  -- an id taken: the loop below, with the due times the plain pass found (dues)
end
local out = {}
local opt_of, staged = {}, {} -- id -> the field written (false: dropped); staged topics
local head_id, head_due = nil, nil
local born_text = digits(created)
-- plain: every job so far a new id written at its due time; a shared call then answers one
-- number for all (out is filled from dues when a job is not)
local plain = shared
for i = 0, n - 1 do
  local b = first + i * per_job
  local id, topic = ARGV[b], s_topic or ARGV[b + 1]
  local old_raw = olds[i + 1]
  if again[i] then
    flush()
    old_raw = redis.call('HGET', K_JOBS, id)
  end
  local due = dues[i]
  if not old_raw and (shared or ARGV[b + 6] == '0') then
    -- the plain path: a new id, no debounce (the record below, without a hold or max_wait)
    -- the texts looked up in line (a function call only for a value not seen yet in this call)
    local due_text = texts[due] or digits(due)
    if shared then records[nr + 2] = 'd|0|' .. due_text .. mid .. ARGV[b + 2] else
      local ttr, max = ARGV[b + 4], ARGV[b + 5]
      records[nr + 2] = 'd|0|' .. due_text .. '|' .. born_text .. '|' .. (by_text[ttr] or
        text_of(ttr)) .. '|' .. (by_text[max] or text_of(max)) .. '||' .. topic .. '|' ..
        ARGV[b + 7]
    end
    records[nr + 1] = id
    -- the score as text when it is the same number (Redis makes a Lua number an argument
    -- with '%.17g'); an absolute time with a fraction keeps its number, as before
    entries[nr + 1], entries[nr + 2] = exact and due_text or due, id
    nr = nr + 2
    if shared then new_shared = new_shared + 1 else counts[topic] = (counts[topic] or 0) + 1 end
    if not head_due or due < head_due then head_id, head_due = id, due end
    local o = with_opts and options[i]
    if o then -- the last job written under an id decides its field (an id may come twice)
      opt_of[id] = o[1] .. '|' .. (o[2] and (due + o[2]) or '') .. '|' .. o[3]
      if o[1] ~= 5 or o[3] ~= '' then staged[topic] = true end
    end
    if not plain then out[i + 1] = due end
    if ev then emit_event('enqueued', id, topic, 0, due, now) end
  else
    if plain then -- the jobs before it were all plain: their answers, their due times
      for k = 0, i - 1 do out[k + 1] = dues[k] end
      plain = false
    end
    local old = old_raw and parse_record(old_raw)
    if old and old.state == 'c' then
      local expires = redis.call('ZSCORE', K_DONE, id)
      if not expires or tonumber(expires) <= now then -- a tombstone past its time frees the id
        flush()
        lib().detach(old, id)
        old_raw, old = nil, nil
      end
    end
    local replace = shared and '0' or ARGV[b + 6]
    if old_raw and string.byte(replace, 1) ~= 49 then -- 49: '1'
      out[i + 1] = string.format('%s:%d', old and old.state or '?', old and old.due or 0)
    else
      -- a job a consumer runs keeps that delivery and is held behind it (includes/hold.lua)
      local held, not_before = nil, nil
      if old then
        flush()
        held, not_before = lib().hold_of(old, id, now)
        if not held or old.state == 'd' then lib().detach(old, id) end
      end
      local born = created
      local max_wait = replace ~= '0' and tonumber(string.match(replace, '^1:(%d+)$'))
      if max_wait then
        if old and old.state == 'd' then born = old.created end
        if born + max_wait < due then due = born + max_wait end
      end
      -- a new record's text (state d, no attempts), each number formatted once per call
      local ttr, max = shared and ARGV[6] or ARGV[b + 4], shared and ARGV[7] or ARGV[b + 5]
      local record = 'd|0|' .. digits(due) .. '|' .. digits(born) .. '|' .. text_of(ttr)
                     .. '|' .. text_of(max) .. '||' .. topic .. '|' .. ARGV[b + o_blob]
      local score = due
      if held then
        record = string.format('d|0|%d|%d|%d|%d|', due, born, tonumber(ttr), tonumber(max))
                 .. held .. '|' .. topic .. '|' .. ARGV[b + o_blob]
        if not_before > score then score = not_before end
      end
      records[nr + 1], records[nr + 2] = id, record
      entries[nr + 1], entries[nr + 2] = score, id
      nr = nr + 2
      counts[topic] = (counts[topic] or 0) + 1
      if not head_due or score < head_due then head_id, head_due = id, score end
      local o = with_opts and options[i]
      if o then -- the last job written under an id decides its field (an id may come twice)
        opt_of[id] = o[1] .. '|' .. (o[2] and (due + o[2]) or '') .. '|' .. o[3]
        if o[1] ~= 5 or o[3] ~= '' then staged[topic] = true end
      elseif old_raw and with_opts then
        opt_of[id] = false
      end
      out[i + 1] = old_raw and string.format('d:%d', due) or due
      if ev then emit_event('enqueued', id, topic, 0, old_raw and (due .. ' replaced') or due, now) end
    end
  end
end
flush()
if with_opts then
  local sets, drops, flags = {}, {}, {}
  for id, value in pairs(opt_of) do
    if value then sets[#sets + 1] = id; sets[#sets + 1] = value else drops[#drops + 1] = id end
  end
  if #sets > 0 then write_many('HSET', K_OPTS, sets) end
  lib().drop_opts(drops)
  for topic in pairs(staged) do flags[#flags + 1] = topic; flags[#flags + 1] = 1 end
  if #flags > 0 then write_many('HSET', K_STAGED, flags) end
end
if head_id then wake_if_head(head_id, head_due) end
-- tombstones exist only where keep_done > 0; ackJobs purges as well, whatever its keep_done
if tonumber(ARGV[2]) ~= 0 then lib().purge_done(now, 100) end
events_flush()
-- a shared call whose every job was a new id written at its due time (whole numbers of ms):
-- one number, the created time in ms (each due time: when_ms for 'a', created + when_ms for 'r')
if plain and n > 0 then
  if exact and whole then return created end
  for k = 0, n - 1 do out[k + 1] = dues[k] end
end
return out
