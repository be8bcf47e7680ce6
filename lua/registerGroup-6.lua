-- registerGroup-6: bind topics to a consumer group (one group per topic) and create the group on
-- each topic stream from its first entry, so jobs promoted before any worker started are read too.
-- KEYS: the six partition keys (includes/keys.lua); creates PREFIX..'t:'..topic when missing.
-- ARGV[1] group, ARGV[2..] topics
-- Returns 1. Errors: 'SDERR GROUP_TAKEN <topic> <group>' when a topic already belongs to another
-- group (nothing written). Retry-safe.
-- @include keys

local group = ARGV[1]
for i = 2, #ARGV do
  local current = redis.call('HGET', K_GROUPS, ARGV[i])
  if current and current ~= group then
    return redis.error_reply('SDERR GROUP_TAKEN ' .. ARGV[i] .. ' ' .. current)
  end
end
for i = 2, #ARGV do
  redis.call('HSET', K_GROUPS, ARGV[i], group)
  if redis.call('HEXISTS', K_COUNTS, ARGV[i]) == 0 then redis.call('HSET', K_COUNTS, ARGV[i], 0) end
  local res = redis.pcall('XGROUP', 'CREATE', stream_key(ARGV[i]), group, '0', 'MKSTREAM')
  if type(res) == 'table' and res.err and not string.find(res.err, 'BUSYGROUP') then return res end
end
return 1
