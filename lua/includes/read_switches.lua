-- read_switches(): the events and workflow switches of this partition (fields 'events' and 'flow'
-- of PREFIX..'meta': includes/emit_event.lua, includes/flow_keep.lua) in one HMGET instead of an
-- HGET each, for a settle script that needs both; read as those helpers read them (absent, not a
-- number or a foreign meta key: off). A script is atomic, so reading them early reads the same.
-- @include keys
-- @include emit_event
-- @include flow_keep
local function read_switches()
  local v = redis.pcall('HMGET', PREFIX .. 'meta', 'events', 'flow')
  if type(v) ~= 'table' or v.err then v = {} end
  events_set(v[1])
  FLOW_KEEP = type(v[2]) == 'string' and tonumber(v[2]) or 0
end
