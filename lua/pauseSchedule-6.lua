#!lua
-- pauseSchedule-6: pause a schedule (its enqueued ticks not yet due are cancelled, no more are
-- enqueued) or resume it from a next tick the caller computed (compare-and-set on the record).
-- KEYS: the six partition keys (includes/keys.lua); writes PREFIX..'sched', 'sched:next', wake.
-- ARGV[1] name, ARGV[2] '1' pause | '0' resume; resume only: ARGV[3] version read, ARGV[4]
-- next tick read, ARGV[5] new next tick.
-- Returns {status, cancelled}: status 1 changed, 0 already so, -2 no such schedule, -1
-- conflict (resume: the record changed since it was read; read again and retry).
-- A pause cancels only ticks whose time has not come (one past its time that waits for its
-- jitter stays and runs) and moves next back to the earliest cancelled tick, so a resume never
-- skips a tick that did not run before the pause and never repeats one that did.
-- Errors: 'SDERR WRONG_TYPE <key> <type>' (nothing written).
-- @include server_time
-- @include keys
-- @include staging
-- @include detach
-- @include parse_record
-- @include parse_schedule
-- @include build_schedule
-- @include index_schedule
-- @include cancel_ahead

local now = server_time()
local name, flag = ARGV[1], ARGV[2]
check_partition_keys()
check_schedule_keys()
local s = parse_schedule(redis.call('HGET', K_SCHED, name))
if not s then return {-2, 0} end
if s.paused == flag then return {0, 0} end
local cancelled = 0
if flag == '1' then
  local first
  cancelled, first = cancel_ahead(s, name, now, true)
  if first and (s.next < 0 or first < s.next) then s.next = first end
  s.paused = '1'
else
  if s.version ~= ARGV[3] or s.next ~= tonumber(ARGV[4]) then return {-1, 0} end
  s.next, s.paused = tonumber(ARGV[5]), '0'
  if s.next >= 0 then redis.call('ZADD', K_WAKE, s.next, 'w') end
end
redis.call('HSET', K_SCHED, name, build_schedule(s))
index_schedule(name, s)
return {1, cancelled}
