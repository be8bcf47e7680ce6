#!lua flags=allow-oom
-- touchJobs-6: heartbeat. Reset the idle time of deliveries this consumer still owns (XCLAIM
-- JUSTID with min-idle 0 on its own entries; the delivery count is not raised), and store the
-- progress reported by their handlers (docs/results.md#progress).
-- KEYS: the six partition keys (includes/keys.lua); touches PREFIX..'t:'..topic and, for a
-- progress, PREFIX..'p:'..id (a string 'entry id|JSON value' that expires after ttl ms).
-- ARGV[1] group, ARGV[2] consumer, ARGV[3] N, then 2 values per delivery: topic, stream entry
-- id; then 4 values per progress: the delivery's position (1..N), job id, ttl ms, value (at
-- most 1 KiB of JSON, checked by the caller). touchJobs' ARGV plus N and the progress values.
-- A progress of a delivery this consumer no longer owns is not written.
-- Checkpoints (docs/worker.md#checkpoints) take the same 4 values with the position negated
-- (-1..-N), job id, an unused 0, the value (at most 64 KiB of JSON, checked by the caller):
-- stored as field job id of PREFIX..'ck' (hash, docs/keys.md#checkpoints) while the consumer
-- owns the delivery; the job's next delivery carries it (entry field 'c').
-- Returns the entry ids this consumer no longer owns (reclaimed, cancelled, handed away, or
-- whose stream or group no longer exists), and those it owns whose job was rescheduled or
-- replaced meanwhile: touched all the same, and the job held behind them keeps waiting
-- (includes/hold.lua); a worker keeps touching such a run until it ends.
-- Flags: allow-oom (a heartbeat adds nothing, so jobs in flight are not lost while Redis is full).
-- A delivery holding a limit lease (docs/limits.md) has it moved on to its job's ttr from now.
-- Retry-safe: touching twice only resets the idle time twice.
-- Events (docs/events.md): 'started' on a delivery's first heartbeat (its delivery count goes
--  from 1 to 2), when the queue keeps events.
-- @include server_time
-- @include keys
-- @include release_lease
-- @include parse_record
-- @include build_record
-- @include wake_if_head
-- @include hold
-- @include emit_event
-- @include touch_started

local group, me = ARGV[1], ARGV[2]
local n = tonumber(ARGV[3]) or 0
local last = 3 + 2 * n -- the last ARGV of the deliveries; progress values follow
if n < 0 or last > #ARGV or (#ARGV - last) % 4 ~= 0 then
  error({err = 'SDERR BAD_ARGS touchJobs: N does not match the values'})
end
local progress = {} -- delivery position -> ARGV index of its progress (negated: checkpoint)
for b = last + 1, #ARGV, 4 do progress[tonumber(ARGV[b])] = b end
local lost = {}
local now = nil
local held = nil -- whether any delivery is held (includes/hold.lua), looked up once
events_batch() -- first heartbeats' 'started' share entries (docs/events.md#entries)
for b = 4, last, 2 do check_lease_keys(ARGV[b]) end -- only topics with leases pay for them
for b = 4, last, 2 do
  local sk, eid = stream_key(ARGV[b]), ARGV[b + 1]
  -- pcall: a stream or group deleted meanwhile (data lost, FLUSHALL) means the entry is lost,
  -- not an error that would cost the other deliveries of the batch their heartbeat
  local row = redis.pcall('XPENDING', sk, group, eid, eid, 1)
  if type(row) == 'table' and not row.err and row[1] and row[1][2] == me then
    redis.call('XCLAIM', sk, group, me, 0, eid, 'RETRYCOUNT', touch_started(ARGV[b], eid, row[1]), 'JUSTID')
    now = now or server_time()
    -- a delivery whose job was rescheduled while it runs: its job's next run keeps waiting
    -- for it, and it is reported as no longer current (its result is ignored)
    if held == nil then held = holds_exist() end
    if held and extend_hold(eid, now) then lost[#lost + 1] = eid end
    if check_lease_keys(ARGV[b]) and redis.call('ZSCORE', leases_key(ARGV[b]), eid) then
      local e = redis.call('XRANGE', sk, eid, eid)[1]
      local r = e and e[2][4] and parse_record(e[2][4])
      if r then redis.call('ZADD', leases_key(ARGV[b]), 'XX', now + r.ttr, eid) end
    end
    local p = progress[(b - 2) / 2]
    if p then
      local ttl = math.max(1, math.floor(tonumber(ARGV[p + 2]) or 1))
      redis.call('SET', PREFIX .. 'p:' .. ARGV[p + 1], eid .. '|' .. ARGV[p + 3], 'PX', ttl)
    end
    p = progress[(2 - b) / 2]
    if p then redis.pcall('HSET', PREFIX .. 'ck', ARGV[p + 1], ARGV[p + 3]) end -- pcall: a foreign value never costs the heartbeat
  else
    lost[#lost + 1] = eid
  end
end
events_flush()
return lost
