-- emit_event(kind, id, topic, attempt, detail, at): append one lifecycle event to this
-- partition's events stream PREFIX..'events' when the queue has events on (docs/events.md).
-- The switch is field 'events' of PREFIX..'meta': the stream's bound (XADD MAXLEN ~); absent or
-- '0' = off, which costs one HGET per script run (read on the first emit, then kept; events_on()
-- reads it for the other event helpers).
-- One event alone, one entry: fields k kind, i job id, t topic, a attempt, at epoch ms (server
-- clock; now when at is nil), d detail (at most 512 bytes).
-- Batched (events_batch() first, events_flush() before the script returns): the call's events
-- share entries of at most EVENTS_PER_ENTRY events and about EVENTS_ENTRY_BYTES bytes, since one
-- XADD costs far more than its fields (docs/events.md#entries). Fields of event n: i<n> job id,
-- after whichever of k<n> t<n> a<n> @<n> d<n> differ from event n-1's (kind, topic, attempt,
-- at, detail: each holds until the next one of its letter). Field names are unique, so a
-- reader that makes a map of the fields keeps them all, in order.
-- A failed XADD (a foreign value at the events key) drops the event, never the transition.
-- @include keys
local EVENTS_MAXLEN = nil
local EVENTS_PER_ENTRY, EVENTS_ENTRY_BYTES = 100, 16384
local EVENTS_BUF = nil -- batched: the fields of the entry being built (nil: one entry per event)
local EVENTS_N, EVENTS_BYTES, EVENTS_LAST = 0, 0, {}
local EVENTS_NAMES = {} -- letter .. n, made once per call
local function events_on()
  if EVENTS_MAXLEN == nil then
    local on = redis.pcall('HGET', PREFIX .. 'meta', 'events')
    EVENTS_MAXLEN = type(on) == 'string' and tonumber(on) or 0
  end
  return EVENTS_MAXLEN > 0
end
local function events_flush()
  if EVENTS_BUF and #EVENTS_BUF > 0 then
    redis.pcall('XADD', PREFIX .. 'events', 'MAXLEN', '~', EVENTS_MAXLEN, '*', unpack(EVENTS_BUF))
    EVENTS_BUF, EVENTS_N, EVENTS_BYTES, EVENTS_LAST = {}, 0, 0, {}
  end
end
local function events_batch()
  if not EVENTS_BUF then EVENTS_BUF = {} end
end
local function events_name(letter, n)
  local names = EVENTS_NAMES[letter]
  if not names then names = {}; EVENTS_NAMES[letter] = names end
  local name = names[n]
  if not name then name = letter .. n; names[n] = name end
  return name
end
local EVENTS_LETTERS = {'k', 't', 'a', '@', 'd'}
local function emit_event(kind, id, topic, attempt, detail, at)
  if not events_on() then return end
  if not at then
    local t = redis.call('TIME')
    at = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  if type(detail) ~= 'number' then
    detail = tostring(detail or '')
    if #detail > 512 then detail = string.sub(detail, 1, 512) end
  end
  attempt = attempt or 0
  local buf = EVENTS_BUF
  if not buf then
    redis.pcall('XADD', PREFIX .. 'events', 'MAXLEN', '~', EVENTS_MAXLEN, '*', 'k', kind, 'i', id,
                't', topic, 'a', attempt, 'at', at, 'd', detail)
    return
  end
  local n, last, b = EVENTS_N + 1, EVENTS_LAST, #buf
  local values = {kind, topic, attempt, at, detail}
  for j = 1, 5 do
    local v = values[j]
    if last[j] ~= v or n == 1 then
      buf[b + 1] = events_name(EVENTS_LETTERS[j], n)
      buf[b + 2] = v
      b = b + 2
      last[j] = v
    end
  end
  buf[b + 1] = events_name('i', n)
  buf[b + 2] = id
  EVENTS_N = n
  EVENTS_BYTES = EVENTS_BYTES + #id + (type(detail) == 'string' and #detail or 16) + 24
  if n >= EVENTS_PER_ENTRY or EVENTS_BYTES >= EVENTS_ENTRY_BYTES then events_flush() end
end
