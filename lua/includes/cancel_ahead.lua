-- cancel_ahead(s, name, now, keep_come): remove the ticks of s.ahead whose jobs are still delayed
-- and not yet due; with keep_come, only those whose tick time has not come yet (a tick past its
-- time whose job waits only for its jitter stays: a pause must not lose it, as a resume goes on
-- from the first tick not yet past). Empties s.ahead. Returns how many were cancelled and the
-- earliest cancelled tick (nil when none).
-- @include keys
-- @include staging
-- @include detach
-- @include parse_record
-- @include parse_schedule
local function cancel_ahead(s, name, now, keep_come)
  local cancelled, first = 0, nil
  for _, t in ipairs(s.ahead) do
    local id = tick_id(name, t)
    local r = parse_record(redis.call('HGET', K_JOBS, id))
    if r and r.state == 'd' and r.due > now and not (keep_come and t <= now) then
      detach(r, id)
      redis.call('HDEL', K_JOBS, id)
      cancelled = cancelled + 1
      if not first or t < first then first = t end
    end
  end
  s.ahead = {}
  return cancelled, first
end
