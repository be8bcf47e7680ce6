-- index_schedule(name, s): point the schedule's entry of PREFIX..'sched:next' at s.next (no entry
-- while paused or when no tick is left).
-- @include keys
-- @include parse_schedule
local function index_schedule(name, s)
  if s.paused == '0' and s.next >= 0 then
    redis.call('ZADD', K_SCHED_NEXT, s.next, name)
  else
    redis.call('ZREM', K_SCHED_NEXT, name)
  end
end
