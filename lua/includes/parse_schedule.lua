-- parse_schedule(raw): a schedule record as a table (nil when raw is false or malformed).
-- Schedules (docs/schedules.md#storage): PREFIX..'sched' is a hash name -> record and
-- PREFIX..'sched:next' a sorted set name -> next tick not yet enqueued (epoch ms; active
-- schedules only). Both share the partition's hash tag, as do the ticks (ids name@<tick ms>,
-- tick_id(name, t)). A record is 'next|last|paused|version|ahead|spec': next and last tick ms
-- (next -1: none left, last 0: none yet), paused 0|1, version (hex digest of spec), ahead the
-- comma list of ticks enqueued whose job was not yet due, spec the producer's MessagePack
-- (never parsed here). check_schedule_keys() refuses the two keys holding another type.
-- @include keys
local K_SCHED, K_SCHED_NEXT = PREFIX .. 'sched', PREFIX .. 'sched:next'
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
local function check_schedule_keys()
  refuse_wrong_type(K_SCHED, 'hash'); refuse_wrong_type(K_SCHED_NEXT, 'zset')
end
local function tick_id(name, t) return name .. '@' .. string.format('%d', t) end
