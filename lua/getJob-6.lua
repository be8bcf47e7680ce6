#!lua flags=no-writes
-- getJob-6: read one job by id with where it is and its options (read only).
-- KEYS: the six partition keys (includes/keys.lua); reads the topic and dead-letter streams.
-- ARGV[1] job id
-- Flags: no-writes (runs while Redis is full, and on a replica).
-- Returns false (nil) when there is no such job (or only an expired tombstone), else
-- {record, substate, owner, idle_ms, deliveries, error, now_ms, opts}: substate is 'ready' or
-- 'reserved' for a job in its stream, else ''; owner/idle/deliveries describe a reservation;
-- error is the last error of a dead job; opts the job's field of PREFIX..'opts' ('<priority>|
-- <deadline_ms>|<key>', docs/keys.md#job-options), '' when it has none.
-- Layout 2: the record of a job in its stream is given whole (its blob read from the stream
-- entry, full_record); when that entry is gone it is given as stored, header only (empty blob).
-- @include server_time
-- @include keys
-- @include parse_record
-- @include full_record

local now = server_time()
local id = ARGV[1]
local raw = redis.call('HGET', K_JOBS, id)
local r = parse_record(raw)
if not r then
  if raw then return {raw, 'corrupt', '', 0, 0, '', now, ''} end
  return false
end
if r.state == 'c' then
  local expires = redis.call('ZSCORE', K_DONE, id)
  if not expires or tonumber(expires) <= now then return false end
end
local sub, owner, idle, deliveries, err = '', '', 0, 0, ''
if r.state == 's' then
  if r.blob == '' and full_record(r) then raw = raw .. r.blob end
  sub = 'ready'
  local group = redis.call('HGET', K_GROUPS, r.topic)
  if group and redis.call('EXISTS', stream_key(r.topic)) == 1 then
    local ok, row = pcall(redis.call, 'XPENDING', stream_key(r.topic), group, r.entry, r.entry, 1)
    if ok and row[1] then sub, owner, idle, deliveries = 'reserved', row[1][2], row[1][3], row[1][4] end
  end
elseif r.state == 'r' then -- due, in its staged topic's lane (docs/priorities.md)
  sub = 'ready'
elseif r.state == 'x' then
  local e = redis.call('XRANGE', dead_key(r.topic), r.entry, r.entry)
  if e[1] then
    local f = e[1][2]
    for i = 1, #f, 2 do if f[i] == 'error' then err = f[i + 1] end end
  end
end
-- a foreign value at K_OPTS (not a hash) shows no options instead of failing the read
local ok, opts = pcall(redis.call, 'HGET', K_OPTS, id)
return {raw, sub, owner, idle, deliveries, err, now, ok and opts or ''}
