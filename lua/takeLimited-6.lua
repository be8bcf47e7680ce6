#!lua
-- takeLimited-6: read new entries of one limited topic for a consumer, no more than its limit
-- lets start now (docs/limits.md). The one place where a limited topic's jobs are taken; the
-- limit's rule is includes/limit_check.lua, applied through includes/topic_limit.lua.
-- KEYS: the six partition keys (includes/keys.lua); touches PREFIX..'t:'..topic and the limit
-- keys of includes/release_lease.lua.
-- ARGV[1] group, ARGV[2] consumer, ARGV[3] topic, ARGV[4] wanted (the free slots, >= 1)
-- Token bucket: capacity = the rate's count, refilled continuously (count per per_ms); a job
-- read takes one token. Leases: one per entry read, member the entry id, expiring ttr ms after
-- the read (touchJobs moves it on, every settle frees it); expired leases are dropped here.
-- Returns {entries, reason, wait_ms, last_id}: entries as XREADGROUP gives them for the stream
-- (at most wanted, none over the limit); reason 0 = got what was wanted, 1 = the rate holds
-- back (wait_ms: until the next token), 2 = the concurrency holds back (wait_ms: until the
-- earliest lease expires; a freed lease pushes onto limitwake), 3 = no more new entries
-- (last_id: the group's last delivered id, to block on with XREAD).
-- A topic without a limit is read as XREADGROUP would (no bucket, no lease).
-- Errors: 'SDERR NO_GROUP <topic>', 'SDERR WRONG_TYPE <key> <type>' (checked before any write),
-- 'SDERR BAD_ARGS'.
-- Retry-safe as a read is: a lost reply leaves the entries in this consumer's pending list
-- (with their leases), where the worker's own-pending look finds them.
-- @include server_time
-- @include keys
-- @include release_lease
-- @include parse_record
-- @include limit_check
-- @include topic_limit

local now = server_time()
local group, me, topic, wanted = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
if not wanted or wanted < 1 then return redis.error_reply('SDERR BAD_ARGS') end
local sk = stream_key(topic)
refuse_wrong_type(sk, 'stream'); check_topic_limit_keys(topic)
if redis.call('EXISTS', sk) == 0 then return redis.error_reply('SDERR NO_GROUP ' .. topic) end

local tl = topic_limit(topic, now, wanted)
local k, reason, wait = tl.k, tl.reason, tl.wait

local entries = {}
if k > 0 then
  local ok, reply = pcall(redis.call, 'XREADGROUP', 'GROUP', group, me, 'COUNT', k, 'STREAMS', sk, '>')
  if not ok then
    if string.find(tostring(reply.err or reply), 'NOGROUP') then
      return redis.error_reply('SDERR NO_GROUP ' .. topic)
    end
    error(reply)
  end
  if reply and reply[1] then entries = reply[1][2] end
end
local got = #entries
topic_limit_took(topic, tl, entries, now)
local last = ''
if got < k then
  reason, wait = 3, 0
  for _, g in ipairs(redis.call('XINFO', 'GROUPS', sk)) do
    local name, lastid
    for f = 1, #g, 2 do
      if g[f] == 'name' then name = g[f + 1] elseif g[f] == 'last-delivered-id' then lastid = g[f + 1] end
    end
    if name == group then last = lastid end
  end
end
return {entries, reason, wait, last}
