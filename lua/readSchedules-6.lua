#!lua flags=no-writes
-- readSchedules-6: schedule records of one partition (read only).
-- KEYS: the six partition keys (includes/keys.lua); reads PREFIX..'sched' and 'sched:next'.
-- ARGV[1] 'due': ARGV[2] lead ms, ARGV[3] limit: the active schedules whose next tick is at most
--         now + lead, earliest first.
--         'names': ARGV[2...] names.
--         'scan': ARGV[2] HSCAN cursor, ARGV[3] count.
-- Returns {now_ms, cursor ('0' unless 'scan' has more), name, record, name, record, ...}; a name
-- without a record has '' as its record.
-- Flags: no-writes.
-- @include server_time
-- @include keys
-- @include parse_schedule

local now = server_time()
local mode = ARGV[1]
local out = {now, '0'}
local names = {}
if mode == 'due' then
  names = redis.call('ZRANGEBYSCORE', K_SCHED_NEXT, '-inf', now + tonumber(ARGV[2]),
                     'LIMIT', 0, tonumber(ARGV[3]))
elseif mode == 'names' then
  for i = 2, #ARGV do names[#names + 1] = ARGV[i] end
elseif mode == 'scan' then
  local reply = redis.call('HSCAN', K_SCHED, ARGV[2], 'COUNT', tonumber(ARGV[3]))
  out[2] = reply[1]
  for i = 1, #reply[2], 2 do
    out[#out + 1] = reply[2][i]
    out[#out + 1] = reply[2][i + 1]
  end
  return out
else
  return redis.error_reply('SDERR BAD_ARGS')
end
for _, name in ipairs(names) do
  out[#out + 1] = name
  out[#out + 1] = redis.call('HGET', K_SCHED, name) or ''
end
return out
