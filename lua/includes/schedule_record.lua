-- Schedules (docs/schedules.md#storage): PREFIX..'sched' is a hash name -> record and
-- PREFIX..'sched:next' a sorted set name -> next tick not yet enqueued (epoch ms; active
-- schedules only). Both share the partition's hash tag, as do the ticks (ids name@<tick ms>).
-- A record is 'next|last|paused|version|ahead|spec': next and last tick ms (next -1: none left,
-- last 0: none yet), paused 0|1, version (hex digest of spec), ahead the comma list of ticks
-- enqueued whose job was not yet due, spec the producer's MessagePack (never parsed here).
-- parse_schedule(raw) -> table or nil; build_schedule(s) -> string; cancel_ahead(s, name, now)
-- removes the ticks of s.ahead that are still delayed and not yet due.
-- @include keys
-- @include detach
-- @include parse_record
local K_SCHED, K_SCHED_NEXT = PREFIX .. 'sched', PREFIX .. 'sched:next'
local function check_schedule_keys()
  refuse_wrong_type(K_SCHED, 'hash'); refuse_wrong_type(K_SCHED_NEXT, 'zset')
end
local function parse_schedule(raw)
  if not raw then return nil end
  local nxt, last, paused, version, ahead, at = string.match(raw,
    '^(%-?%d+)|(%-?%d+)|([01])|(%x*)|([%d,]*)|()')
  if not nxt then return nil end
  local list = {}
  for t in string.gmatch(ahead, '%d+') do list[#list + 1] = tonumber(t) end
  return {next = tonumber(nxt), last = tonumber(last), paused = paused, version = version,
          ahead = list, spec = string.sub(raw, at)}
end
local function build_schedule(s)
  local ahead = {}
  for i, t in ipairs(s.ahead) do ahead[i] = string.format('%d', t) end
  return string.format('%d|%d|%s|%s|', s.next, s.last, s.paused, s.version)
         .. table.concat(ahead, ',') .. '|' .. s.spec
end
local function tick_id(name, t) return name .. '@' .. string.format('%d', t) end
-- Returns how many were cancelled and the earliest cancelled tick (nil when none).
local function cancel_ahead(s, name, now)
  local cancelled, first = 0, nil
  for _, t in ipairs(s.ahead) do
    local id = tick_id(name, t)
    local r = parse_record(redis.call('HGET', K_JOBS, id))
    if r and r.state == 'd' and r.due > now then
      detach(r, id)
      redis.call('HDEL', K_JOBS, id)
      cancelled = cancelled + 1
      if not first or t < first then first = t end
    end
  end
  s.ahead = {}
  return cancelled, first
end
-- Points the schedule's entry of the next-tick set at s.next (gone when paused or no next).
local function index_schedule(name, s)
  if s.paused == '0' and s.next >= 0 then
    redis.call('ZADD', K_SCHED_NEXT, s.next, name)
  else
    redis.call('ZREM', K_SCHED_NEXT, name)
  end
end
