-- emit_started(id, rec, group, eid, now): 'started' for the delivery eid of job id (rec: its
-- record, raw or parsed), when it is current and not reported yet: its pending entry's delivery
-- count is 1 (the first heartbeat reports it and raises the count to 2: touch_started). at =
-- when its consumer read it (now minus the entry's idle time, which only a heartbeat resets).
-- Called by the settling scripts before the delivery is acknowledged; a job named twice in one
-- call is reported once.
-- started_prefetch(group, by_topic): for a batch (by_topic: topic -> list of entry ids), one
-- ranged XPENDING per topic from the lowest to the highest entry id of the call (bounded COUNT)
-- instead of one XPENDING per delivery; an entry the bounded range did not reach is looked up
-- alone (docs/events.md#started).
-- started_at(group, topic, eid, now): for a batch settle that checked the delivery is current
-- itself, the 'started' time of delivery eid (now minus its idle time), or nil when it is not
-- pending with a delivery count of 1; the caller writes the event (events_run) and reports a
-- job named twice once, so the record is parsed once per job (docs/events.md#started).
-- Lazy: the state and the helpers are built by started_lib() on the first call with events on
-- (includes/emit_event.lua), so a queue with events off pays one closure per helper only.
-- @include keys
-- @include emit_event
local function started_lib()
  local EVENTS_STARTED = {}
  -- entry id -> its idle ms when its delivery count is 1, false when higher (started_prefetch)
  local EVENTS_PEL = {}
  local EVENTS_PEL_WHOLE = {} -- topic -> true when its ranged XPENDING covered the call's range
  -- a < b for stream entry ids: the common case (both of 13-digit ms, the same length) is one
  -- string comparison, as parsing each id costs far more (docs/events.md#started)
  local function started_before(a, b)
    if #a == #b and string.byte(a, 14) == 45 and string.byte(b, 14) == 45 then return a < b end
    local ams, aseq = string.match(a, '^(%d+)%-(%d+)$')
    local bms, bseq = string.match(b, '^(%d+)%-(%d+)$')
    if not (ams and bms) then return false end
    ams, bms = tonumber(ams), tonumber(bms)
    return ams < bms or (ams == bms and tonumber(aseq) < tonumber(bseq))
  end
  local function prefetch(group, by_topic)
    for topic, eids in pairs(by_topic) do
      local lo, hi = eids[1], eids[1]
      for k = 2, #eids do
        local eid = eids[k]
        local n = #eid
        if n == #lo and n == #hi then -- ids of one length: of the same ms digits, as the
          if eid < lo then lo = eid elseif hi < eid then hi = eid end -- server writes them
        elseif started_before(eid, lo) then lo = eid
        elseif started_before(hi, eid) then hi = eid end
      end
      if lo and #eids > 1 then
        local count = 2 * #eids + 64
        local rows = redis.pcall('XPENDING', PREFIX .. 't:' .. topic, group, lo, hi, count)
        if type(rows) == 'table' and not rows.err then
          for _, row in ipairs(rows) do EVENTS_PEL[row[1]] = row[4] == 1 and row[3] end
          EVENTS_PEL_WHOLE[topic] = #rows < count
        end
      end
    end
  end
  local function started_at(group, topic, eid, now)
    local idle = EVENTS_PEL[eid]
    if idle == nil then
      if EVENTS_PEL_WHOLE[topic] then return nil end -- in the range read, not pending
      local rows = redis.pcall('XPENDING', PREFIX .. 't:' .. topic, group, eid, eid, 1)
      if type(rows) ~= 'table' or rows.err then return nil end
      local row = rows[1]
      idle = row and tonumber(row[4]) == 1 and tonumber(row[3])
      EVENTS_PEL[eid] = idle
    end
    return idle and now - idle or nil
  end
  local function started(id, rec, group, eid, now)
    local state, attempts, entry, topic
    if type(rec) == 'table' then
      state, attempts, entry, topic = rec.state, rec.attempts, rec.entry, rec.topic
    else
      state, attempts, entry, topic = string.match(rec,
        '^([dsxc])|(%d+)|%d+|%d+|%d+|%d+|([%d%-]*)|([^|]+)|')
    end
    if state ~= 's' or entry ~= eid or EVENTS_STARTED[eid] then return end
    local at = started_at(group, topic, eid, now)
    if at then
      EVENTS_STARTED[eid] = true
      emit_event('started', id, topic, tonumber(attempts) + 1, '', at)
    end
  end
  EV.prefetch, EV.started, EV.started_at = prefetch, started, started_at
  return started
end
local function started_prefetch(group, by_topic)
  if not events_on() then return end
  if not EV.prefetch then started_lib() end
  return EV.prefetch(group, by_topic)
end
local function emit_started(id, rec, group, eid, now)
  if not events_on() or not rec then return end
  return (EV.started or started_lib())(id, rec, group, eid, now)
end
local function started_at(group, topic, eid, now)
  if not EV.started_at then started_lib() end
  return EV.started_at(group, topic, eid, now)
end
