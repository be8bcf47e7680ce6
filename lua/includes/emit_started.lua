-- emit_started(id, rec, group, eid, now): 'started' for the delivery eid of job id (rec: its
-- record, raw or parsed), when it is current and not reported yet: its pending entry's delivery
-- count is 1 (the first heartbeat reports it and raises the count to 2: touch_started). at =
-- when its consumer read it (now minus the entry's idle time, which only a heartbeat resets).
-- Called by the settling scripts before the delivery is acknowledged; a job named twice in one
-- call is reported once.
-- @include keys
-- @include emit_event
local EVENTS_STARTED = {}
local function emit_started(id, rec, group, eid, now)
  if not events_on() or not rec or EVENTS_STARTED[eid] then return end
  local state, attempts, entry, topic
  if type(rec) == 'table' then
    state, attempts, entry, topic = rec.state, rec.attempts, rec.entry, rec.topic
  else
    state, attempts, entry, topic = string.match(rec,
      '^([dsxc])|(%d+)|%d+|%d+|%d+|%d+|([%d%-]*)|([^|]+)|')
  end
  if state ~= 's' or entry ~= eid then return end
  local row = redis.pcall('XPENDING', PREFIX .. 't:' .. topic, group, eid, eid, 1)
  if type(row) ~= 'table' or row.err or not row[1] or tonumber(row[1][4]) > 1 then return end
  EVENTS_STARTED[eid] = true
  emit_event('started', id, topic, tonumber(attempts) + 1, '', now - tonumber(row[1][3]))
end
