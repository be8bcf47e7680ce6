-- key_limits: the key limits of a staged topic (docs/limits.md#key-limits): every key of the topic is held to
-- the same limit, kept in every partition's PREFIX..'keylimits' (hash topic ->
-- 'count|per_ms|concurrency', an empty part: not limited so; written by setKeyLimit). Per key:
--   PREFIX..'kl:'..topic..'|'..key  zset stream entry id -> the job's ttr ms: a lease per
--                                   delivery of the key (key concurrency)
--   PREFIX..'kb:'..topic..'|'..key  hash tokens, ts (ms): the key's token bucket (key rate); it
--                                   expires once it would be full again
-- A lease counts while its entry is in the group's pending list and idle less than its ttr
-- (XPENDING; a heartbeat resets the idle time), so nothing has to move it on, and a worker
-- killed with -9 loses it one ttr after its last heartbeat, as its jobs are reclaimed. Every
-- settle frees it at once (release_key_lease in includes/release_lease.lua). With more than
-- LEASE_LOOK leases in use a full key checks its LEASE_LOOK oldest (lowest ttr first) per look.
-- @include keys
local LEASE_LOOK = 64
local function klease_key(topic, key) return PREFIX .. 'kl:' .. topic .. '|' .. key end
local function kbucket_key(topic, key) return PREFIX .. 'kb:' .. topic .. '|' .. key end
local KL = {}
local fresh = {} -- entry ids leased in this call: not delivered yet (no XPENDING row), valid
local function check_key_limit_keys(topic) refuse_wrong_type(PREFIX .. 'keylimits', 'hash') end
local function load_key_limits(topic)
  local spec = redis.call('HGET', PREFIX .. 'keylimits', topic)
  if spec then
    local c, p, n = string.match(spec, '^(%d*)|(%d*)|(%d*)$')
    KL.count, KL.per, KL.conc = tonumber(c), tonumber(p), tonumber(n)
  end
end
local function key_tokens(topic, key, now)
  local b = redis.call('HMGET', kbucket_key(topic, key), 'tokens', 'ts')
  local tokens = tonumber(b[1]) or KL.count
  local ts = tonumber(b[2]) or now
  if now > ts then tokens = math.min(KL.count, tokens + (now - ts) * KL.count / KL.per) end
  return tokens
end
-- key_may_start(topic, key, group, now): true, or false and the epoch ms when it may again
local function key_may_start(topic, key, group, now)
  if KL.conc then
    local kl = klease_key(topic, key)
    local n = redis.call('ZCARD', kl)
    if n >= KL.conc then
      local soonest = nil
      local rows = redis.call('ZRANGE', kl, 0, LEASE_LOOK - 1, 'WITHSCORES')
      for i = 1, #rows, 2 do
        local eid, ttr = rows[i], tonumber(rows[i + 1])
        local idle = 0
        if not fresh[eid] then
          local ok, p = pcall(redis.call, 'XPENDING', stream_key(topic), group, eid, eid, 1)
          idle = ok and p[1] and tonumber(p[1][3])
        end
        if not idle or idle >= ttr then
          redis.call('ZREM', kl, eid)
          n = n - 1
        elseif not soonest or ttr - idle < soonest then
          soonest = ttr - idle
        end
      end
      if n >= KL.conc then return false, now + math.max(soonest or 1000, 1) end
    end
  end
  if KL.count and KL.per then
    local tokens = key_tokens(topic, key, now)
    if tokens < 1 then
      return false, now + math.max(math.ceil((1 - tokens) * KL.per / KL.count), 1)
    end
  end
  return true
end
-- key_started(topic, key, eid, ttr, now): a delivery of the key started: its lease, its token
local function key_started(topic, key, eid, ttr, now)
  if KL.conc then
    redis.call('ZADD', klease_key(topic, key), ttr, eid)
    fresh[eid] = true
  end
  if KL.count and KL.per then
    local kb = kbucket_key(topic, key)
    local tokens = key_tokens(topic, key, now) - 1
    redis.call('HSET', kb, 'tokens', string.format('%.6f', tokens), 'ts', now)
    redis.call('PEXPIRE', kb, math.ceil((KL.count - tokens) * KL.per / KL.count) + 1000)
  end
end
