-- registerGroup-6: bind topics to a consumer group (one group per topic) and create the group on
-- each topic stream from its first entry, so jobs promoted before any worker started are read too.
-- KEYS: the six partition keys (includes/keys.lua); creates PREFIX..'t:'..topic when missing.
-- ARGV[1] group, ARGV[2..] topics
-- Returns 1. Errors: 'SDERR GROUP_TAKEN <topic> <group>' when a topic already belongs to another
-- group, 'SDERR WRONG_TYPE <key> <type>' (both: nothing written). Retry-safe.
-- Writes only what is missing: a registration that changes nothing writes nothing, so a worker
-- starts while Redis is full. No shebang on purpose: without script flags Redis refuses only the
-- first write under maxmemory (nothing was written before it) and lets the reads run.
-- @include keys

local group = ARGV[1]
check_partition_keys()
for i = 2, #ARGV do
  local current = redis.call('HGET', K_GROUPS, ARGV[i])
  if current and current ~= group then
    return redis.error_reply('SDERR GROUP_TAKEN ' .. ARGV[i] .. ' ' .. current)
  end
  refuse_wrong_type(stream_key(ARGV[i]), 'stream')
end
local function has_group(sk)
  if redis.call('EXISTS', sk) == 0 then return false end
  for _, g in ipairs(redis.call('XINFO', 'GROUPS', sk)) do
    for j = 1, #g, 2 do if g[j] == 'name' and g[j + 1] == group then return true end end
  end
  return false
end
for i = 2, #ARGV do
  local topic = ARGV[i]
  if redis.call('HGET', K_GROUPS, topic) ~= group then redis.call('HSET', K_GROUPS, topic, group) end
  if redis.call('HEXISTS', K_COUNTS, topic) == 0 then redis.call('HSET', K_COUNTS, topic, 0) end
  if not has_group(stream_key(topic)) then
    local res = redis.pcall('XGROUP', 'CREATE', stream_key(topic), group, '0', 'MKSTREAM')
    if type(res) == 'table' and res.err and not string.find(res.err, 'BUSYGROUP') then return res end
  end
end
return 1
