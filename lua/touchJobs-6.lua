#!lua flags=allow-oom
-- touchJobs-6: heartbeat. Reset the idle time of deliveries this consumer still owns (XCLAIM
-- JUSTID with min-idle 0 on its own entries; the delivery count is not raised).
-- KEYS: the six partition keys (includes/keys.lua); touches PREFIX..'t:'..topic.
-- ARGV[1] group, ARGV[2] consumer, then 2 values per delivery: topic, stream entry id
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
local lost = {}
local now = nil
local held = nil -- whether any delivery is held (includes/hold.lua), looked up once
for b = 3, #ARGV, 2 do check_lease_keys(ARGV[b]) end -- only topics with leases pay for them
for b = 3, #ARGV, 2 do
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
  else
    lost[#lost + 1] = eid
  end
end
return lost
