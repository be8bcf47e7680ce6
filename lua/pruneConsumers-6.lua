#!lua flags=allow-oom
-- pruneConsumers-6: remove consumers of a topic's group that are gone and own nothing.
-- A consumer is removed when it has no pending entry and has not touched the stream for at least
-- ARGV[3] ms ('idle' of XINFO CONSUMERS: since its last read attempt, blocking reads included, so
-- a live idle worker never qualifies). Removing a live consumer would be harmless anyway: it owns
-- nothing, and its next XREADGROUP creates it again.
-- KEYS: the six partition keys (includes/keys.lua); touches PREFIX..'t:'..topic.
-- ARGV[1] group, ARGV[2] topic, ARGV[3] min idle ms, ARGV[4] max consumers removed per call
-- Returns the removed consumer names (empty when the topic's stream or group does not exist).
-- Retry-safe: a removed consumer is not listed again. Bounded: at most ARGV[4] removals, and one
-- XINFO CONSUMERS (a group has one consumer per worker process that ever read from it).
-- Flags: allow-oom (it only removes).
-- @include keys

local group, topic = ARGV[1], ARGV[2]
local min_idle, limit = tonumber(ARGV[3]), tonumber(ARGV[4])
local sk = stream_key(topic)
if redis.call('TYPE', sk).ok ~= 'stream' then return {} end
local ok, consumers = pcall(redis.call, 'XINFO', 'CONSUMERS', sk, group)
if not ok then return {} end
local removed = {}
for _, c in ipairs(consumers) do
  if #removed >= limit then break end
  local info = {}
  for i = 1, #c, 2 do info[c[i]] = c[i + 1] end
  if tonumber(info['pending']) == 0 and tonumber(info['idle'] or -1) >= min_idle then
    redis.call('XGROUP', 'DELCONSUMER', sk, group, info['name'])
    removed[#removed + 1] = info['name']
  end
end
return removed
