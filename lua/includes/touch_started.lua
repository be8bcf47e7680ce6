-- touch_started(topic, eid, row): the delivery count a heartbeat's XCLAIM keeps for the XPENDING
-- row {eid, owner, idle, count}: 2 after emitting 'started' for a count of 1 (events on), else the
-- count as it is (a heartbeat never raises it otherwise). at = when the consumer read the
-- delivery (now minus its idle time); the job id and attempt come from its stream entry.
-- @include keys
-- @include emit_event
local function touch_started(topic, eid, row)
  local count = tonumber(row[4])
  if count ~= 1 or not events_on() then return count end
  local e = redis.call('XRANGE', PREFIX .. 't:' .. topic, eid, eid)[1]
  local f = e and e[2]
  if not (f and f[1] == 'id' and f[3] == 'rec') then return count end
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local attempts = tonumber(string.match(f[4], '^.|(%d+)|')) or 0
  emit_event('started', f[2], topic, attempts + 1, '', now - tonumber(row[3]))
  return 2
end
