#!lua
-- takeGranted-6: the middle step of a take of a limited topic on a partition p other than 0
-- (docs/limits.md#more-than-one-partition): read at most the count acquireLimit granted of new
-- entries of the topic for a consumer; the limit itself is not checked here (its state lives in
-- partition 0's slot). The reply has takeLimited's shape, so one parser reads both.
-- KEYS: the six partition keys (includes/keys.lua); touches PREFIX..'t:'..topic (read only
-- but for the group's pending list, as XREADGROUP).
-- ARGV[1] group, ARGV[2] consumer, ARGV[3] topic, ARGV[4] count (>= 1)
-- Returns {entries, reason, 0, last_id}: entries as XREADGROUP gives them (at most count);
-- reason 0 = got count, 3 = no more new entries (last_id: the group's last delivered id, to
-- block on with XREAD).
-- Errors: 'SDERR NO_GROUP <topic>', 'SDERR WRONG_TYPE <key> <type>', 'SDERR BAD_ARGS'.
-- Retry-safe as a read is: a lost reply leaves the entries in this consumer's pending list,
-- where the worker's own-pending look finds them (their unnamed leases expire).
-- @include keys

local group, me, topic, k = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
if not k or k < 1 then return redis.error_reply('SDERR BAD_ARGS') end
local sk = stream_key(topic)
refuse_wrong_type(sk, 'stream')
if redis.call('EXISTS', sk) == 0 then return redis.error_reply('SDERR NO_GROUP ' .. topic) end
local ok, reply = pcall(redis.call, 'XREADGROUP', 'GROUP', group, me, 'COUNT', k, 'STREAMS', sk, '>')
if not ok then
  if string.find(tostring(reply.err or reply), 'NOGROUP') then
    return redis.error_reply('SDERR NO_GROUP ' .. topic)
  end
  error(reply)
end
local entries = (reply and reply[1]) and reply[1][2] or {}
local last = ''
if #entries < k then
  for _, g in ipairs(redis.call('XINFO', 'GROUPS', sk)) do
    local name, lastid
    for f = 1, #g, 2 do
      if g[f] == 'name' then name = g[f + 1] elseif g[f] == 'last-delivered-id' then lastid = g[f + 1] end
    end
    if name == group then last = lastid end
  end
  return {entries, 3, 0, last}
end
return {entries, 0, 0, last}
