-- emit_event(kind, id, topic, attempt, detail, at): append one lifecycle event to this
-- partition's events stream PREFIX..'events' when the queue has events on (docs/events.md).
-- The switch is field 'events' of PREFIX..'meta': the stream's bound (XADD MAXLEN ~); absent or
-- '0' = off, which costs one HGET per script run (read on the first emit, then kept; events_on()
-- reads it for the other event helpers).
-- Entry fields: k kind, i job id, t topic, a attempt, at epoch ms (server clock; now when at is
-- nil), d detail (at most 512 bytes). A failed XADD (a foreign value at the events key) drops
-- the event, never the transition that emitted it.
-- @include keys
local EVENTS_MAXLEN = nil
local function events_on()
  if EVENTS_MAXLEN == nil then
    local on = redis.pcall('HGET', PREFIX .. 'meta', 'events')
    EVENTS_MAXLEN = type(on) == 'string' and tonumber(on) or 0
  end
  return EVENTS_MAXLEN > 0
end
local function emit_event(kind, id, topic, attempt, detail, at)
  if not events_on() then return end
  if not at then
    local t = redis.call('TIME')
    at = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  detail = tostring(detail or '')
  if #detail > 512 then detail = string.sub(detail, 1, 512) end
  redis.pcall('XADD', PREFIX .. 'events', 'MAXLEN', '~', EVENTS_MAXLEN, '*', 'k', kind, 'i', id,
              't', topic, 'a', attempt or 0, 'at', at, 'd', detail)
end
