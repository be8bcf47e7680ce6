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
-- Numbers go to XADD as text made here ('%d'): Redis turns a Lua number argument into text with
-- '%.17g', which made a one-event XADD ~15 % dearer (docs/benchmarks.md#lifecycle-events).
local EV = {} -- max: the switch (nil until read), bound: it as XADD's MAXLEN text; batched;
              -- emit, flush: built by events_lib()
-- events_set(raw): the switch from the meta field's value (absent, not a number: off)
local function events_set(raw)
  local max = type(raw) == 'string' and tonumber(raw) or 0
  EV.max = max
  if max > 0 then EV.bound = string.format('%d', max) end
end
local function events_on()
  if EV.max == nil then events_set(redis.pcall('HGET', PREFIX .. 'meta', 'events')) end
  return EV.max > 0
end
local function event_alone(kind, id, topic, attempt, at, detail) -- one event, one entry
  redis.pcall('XADD', PREFIX .. 'events', 'MAXLEN', '~', EV.bound, '*', 'k', kind, 'i', id,
              't', topic, 'a', attempt == 0 and '0' or attempt,
              'at', type(at) == 'number' and string.format('%d', at) or at, 'd', detail)
end
-- events_lib(): the batch writer, emit(...) of normalized events and flush()
local function events_lib()
  local EVENTS_PER_ENTRY, EVENTS_ENTRY_BYTES = 100, 16384
  local EVENTS_N, EVENTS_BYTES = 0, 0 -- events in the entry being built, and their bytes
  -- the ids and the details as segments: one event's, or a run's joined by '\n' in one
  -- table.concat (a run costs no Lua work per event: docs/benchmarks.md, History); the entry's
  -- lists are the segments joined by '\n'. The tables are reused by every entry of the call.
  local EV_I, EV_D, SEGS = {}, {}, 0
  local EV_K, EV_T, EV_A, EV_AT = {}, {}, {}, {}
  local NK, NT, NA, NAT = 0, 0, 0, 0 -- how many of EV_K, EV_T, EV_A, EV_AT this entry uses
  local EV_LK, EV_LT, EV_LA, EV_LAT = nil, nil, nil, nil -- the last event's kind, topic, attempt, at
  local concat, find = table.concat, string.find
  local function flush()
    local n = EVENTS_N
    if n == 0 then return end
    if n == 1 then
      event_alone(EV_LK, EV_I[1], EV_LT, EV_LA, EV_LAT, EV_D[1])
    else
      redis.pcall('XADD', PREFIX .. 'events', 'MAXLEN', '~', EV.bound, '*', 'n', string.format('%d', n),
                  'i', concat(EV_I, '\n', 1, SEGS), 'd', concat(EV_D, '\n', 1, SEGS),
                  'k', concat(EV_K, ' ', 1, NK), 'a', concat(EV_A, ' ', 1, NA),
                  '@', concat(EV_AT, ' ', 1, NAT), 't', concat(EV_T, '', 1, NT))
    end
    EVENTS_N, EVENTS_BYTES, SEGS, NK, NT, NA, NAT = 0, 0, 0, 0, 0, 0, 0
    EV_LK, EV_LT, EV_LA, EV_LAT = nil, nil, nil, nil
  end
  local ev_format = string.format -- looked up once a call
  local function emit(kind, id, topic, attempt, detail, at)
    local n = EVENTS_N + 1
    EVENTS_N = n
    -- '%d': far cheaper than Lua's number to text (%.14g) that table.concat would use
    if kind ~= EV_LK then NK = NK + 1; EV_K[NK] = ev_format('%d %s', n, kind); EV_LK = kind end
    if topic ~= EV_LT then NT = NT + 1; EV_T[NT] = ev_format('%d %d %s', n, #topic, topic); EV_LT = topic end
    if attempt ~= EV_LA then NA = NA + 1; EV_A[NA] = ev_format('%d %d', n, attempt); EV_LA = attempt end
    if at ~= EV_LAT then NAT = NAT + 1; EV_AT[NAT] = ev_format('%d %d', n, at); EV_LAT = at end
    local seg = SEGS + 1
    SEGS = seg
    EV_I[seg], EV_D[seg] = id, detail
    EVENTS_BYTES = EVENTS_BYTES + #id + #detail + 8
    if n >= EVENTS_PER_ENTRY or EVENTS_BYTES >= EVENTS_ENTRY_BYTES then flush() end
  end
  -- run(kind, topic, attempt, at, ids, details, first, last): events first..last of ids (with
  -- details[j], or '' when details is nil) that share kind, topic, attempt and time: the first
  -- through emit (it marks what changed), the rest of what fits the entry as one segment, after
  -- one search for a line feed in all of them; the rest of a run that holds one, or that would
  -- not fit the entry's bytes, is written event by event
  local function run(kind, topic, attempt, at, ids, details, first, last)
    local joins = true
    while first <= last do
      local id, detail = ids[first], details and details[first] or ''
      if find(id, '\n', 1, true) or find(detail, '\n', 1, true) then
        flush() -- alone, after the events before it
        event_alone(kind, id, topic, attempt, at, detail)
        first = first + 1
      else
        emit(kind, id, topic, attempt, detail, at)
        first = first + 1
        local n = EVENTS_N
        local k = math.min(EVENTS_PER_ENTRY - n, last - first + 1) -- the rest that may fit
        if joins and n > 0 and k > 0 then
          local joined = concat(ids, '', first, first + k - 1)
          local dj = details and concat(details, '', first, first + k - 1) or ''
          local bytes = EVENTS_BYTES + #joined + #dj + 8 * k
          if bytes <= EVENTS_ENTRY_BYTES and not find(joined, '\n', 1, true)
              and not find(dj, '\n', 1, true) then
            local seg = SEGS + 1
            SEGS = seg
            EV_I[seg] = concat(ids, '\n', first, first + k - 1)
            EV_D[seg] = details and concat(details, '\n', first, first + k - 1)
                        or string.rep('\n', k - 1)
            EVENTS_N, EVENTS_BYTES = n + k, bytes
            first = first + k
            if n + k >= EVENTS_PER_ENTRY then flush() end
          else
            joins = false
          end
        end
      end
    end
  end
  EV.emit, EV.flush, EV.run = emit, flush, run
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
-- events_run(kind, topic, attempt, at, ids, details, first, last): events first..last of ids
-- (details: a list of at most 512 bytes each, or nil: all ''), that share kind, topic, attempt
-- and time, as one run: for a script that checked events_on() and found the runs itself while
-- it went through its batch (a per-event list of topics, attempts and times costs more)
local function events_run(kind, topic, attempt, at, ids, details, first, last)
  if first > last then return end
  if not EV.emit then events_lib() end
  EV.run(kind, topic, attempt, at, ids, details, first, last)
end
