-- emit_event(kind, id, topic, attempt, detail, at): append one lifecycle event to this
-- partition's events stream PREFIX..'events' when the queue has events on (docs/events.md).
-- The switch is field 'events' of PREFIX..'meta': the stream's bound (XADD MAXLEN ~); absent or
-- '0' = off, which costs one HGET per script run (read on the first emit, then kept; events_on()
-- reads it for the other event helpers).
-- One event alone, one entry: fields k kind, i job id, t topic, a attempt, at epoch ms (server
-- clock; now when at is nil), d detail (at most 512 bytes).
-- Batched (events_batch() first, events_flush() before the script returns): the call's events
-- share entries of at most EVENTS_PER_ENTRY events and about EVENTS_ENTRY_BYTES bytes, since one
-- XADD costs far more than its fields (docs/events.md#entries). A batch of one event is written
-- as above; of several, as packed lists (each built with one table.concat at the flush, so an
-- event costs a few table stores and no number formatting): n count; i the job ids and d the
-- details, each joined by '\n'; k, a, @ the kinds, attempts and times where they change
-- ('<event index> <value>' pairs, space-separated); t the topics where they change ('<event
-- index> <byte length> <topic>', back to back). An event whose id or detail holds a '\n' is
-- written alone, after the events before it.
-- A failed XADD (a foreign value at the events key) drops the event, never the transition.
-- Lazy: the state lives in one table EV; the writer (its tables and closures) is built by
-- events_lib() on the first batched emit of a queue with events on (an unbatched event goes out
-- through event_alone), so a script with events off pays the HGET and a few closures only
-- (docs/keys.md#includes; docs/benchmarks.md, History).
-- @include keys
local EV = {} -- max: the switch (nil until read); batched; emit, flush: built by events_lib()
local function events_on()
  local max = EV.max
  if max == nil then
    local on = redis.pcall('HGET', PREFIX .. 'meta', 'events')
    max = type(on) == 'string' and tonumber(on) or 0
    EV.max = max
  end
  return max > 0
end
local function event_alone(kind, id, topic, attempt, at, detail) -- one event, one entry
  redis.pcall('XADD', PREFIX .. 'events', 'MAXLEN', '~', EV.max, '*', 'k', kind, 'i', id,
              't', topic, 'a', attempt, 'at', at, 'd', detail)
end
-- events_lib(): the batch writer, emit(...) of normalized events and flush()
local function events_lib()
  local EVENTS_PER_ENTRY, EVENTS_ENTRY_BYTES = 100, 16384
  local EVENTS_N, EVENTS_BYTES = 0, 0
  local EV_I, EV_D, EV_K, EV_T, EV_A, EV_AT = {}, {}, {}, {}, {}, {}
  local EV_LK, EV_LT, EV_LA, EV_LAT = nil, nil, nil, nil -- the last event's kind, topic, attempt, at
  local function flush()
    local n = EVENTS_N
    if n == 0 then return end
    if n == 1 then
      event_alone(EV_LK, EV_I[1], EV_LT, EV_LA, EV_LAT, EV_D[1])
    else
      local concat = table.concat
      redis.pcall('XADD', PREFIX .. 'events', 'MAXLEN', '~', EV.max, '*', 'n', n,
                  'i', concat(EV_I, '\n'), 'd', concat(EV_D, '\n'), 'k', concat(EV_K, ' '),
                  'a', concat(EV_A, ' '), '@', concat(EV_AT, ' '), 't', concat(EV_T))
    end
    EVENTS_N, EVENTS_BYTES = 0, 0
    EV_I, EV_D, EV_K, EV_T, EV_A, EV_AT = {}, {}, {}, {}, {}, {}
    EV_LK, EV_LT, EV_LA, EV_LAT = nil, nil, nil, nil
  end
  local ev_format = string.format -- looked up once a call
  local function emit(kind, id, topic, attempt, detail, at)
    local n = EVENTS_N + 1
    EVENTS_N = n
    -- '%d': far cheaper than Lua's number to text (%.14g) that table.concat would use
    if kind ~= EV_LK then EV_K[#EV_K + 1] = ev_format('%d %s', n, kind); EV_LK = kind end
    if topic ~= EV_LT then EV_T[#EV_T + 1] = ev_format('%d %d %s', n, #topic, topic); EV_LT = topic end
    if attempt ~= EV_LA then EV_A[#EV_A + 1] = ev_format('%d %d', n, attempt); EV_LA = attempt end
    if at ~= EV_LAT then EV_AT[#EV_AT + 1] = ev_format('%d %d', n, at); EV_LAT = at end
    EV_I[n], EV_D[n] = id, detail
    EVENTS_BYTES = EVENTS_BYTES + #id + #detail + 8
    if n >= EVENTS_PER_ENTRY or EVENTS_BYTES >= EVENTS_ENTRY_BYTES then flush() end
  end
  EV.emit, EV.flush = emit, flush
  return emit
end
local function events_flush()
  local flush = EV.flush
  if flush then flush() end
end
local function events_batch()
  EV.batched = true
end
local function emit_event(kind, id, topic, attempt, detail, at)
  if not events_on() then return end
  -- an event that cannot be written is dropped, never the transition (a foreign record)
  if not (id and topic) then return end
  if not at then
    local t = redis.call('TIME')
    at = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  local td = type(detail)
  if td == 'number' and detail % 1 == 0 then detail = string.format('%d', detail)
  elseif td ~= 'string' then detail = tostring(detail or '') end
  if #detail > 512 then detail = string.sub(detail, 1, 512) end
  attempt = attempt or 0
  if EV.batched and not (string.find(id, '\n', 1, true) or string.find(detail, '\n', 1, true)) then
    return (EV.emit or events_lib())(kind, id, topic, attempt, detail, at)
  end
  -- unbatched (written as it comes, the writer never built: a one-job enqueue would pay for
  -- its closures), or an id or detail with a line feed: alone, after the events before it
  events_flush()
  event_alone(kind, id, topic, attempt, at, detail)
end
-- events_push(kind, id, topic, attempt, at, detail): a batched event, for a script that checked
-- events_on() and has its values normalized (attempt a number, at epoch ms, detail nil or a
-- string of at most 512 bytes without a line feed, such as an entry id): skips emit_event's
-- checks, the per-event cost of a drain (docs/benchmarks.md, History)
local function events_push(kind, id, topic, attempt, at, detail)
  detail = detail or ''
  if string.find(id, '\n', 1, true) then return emit_event(kind, id, topic, attempt, detail, at) end
  return (EV.emit or events_lib())(kind, id, topic, attempt, detail, at)
end
