#!lua
-- nameLeases-1: the last step of a take of a limited topic on a partition p other than 0
-- (docs/limits.md#more-than-one-partition): each entry taken gets one of the leases
-- acquireLimit granted, named '<p>:<entry id>' and expiring after its job's ttr; the leases
-- not used are handed back (waiting workers woken), and so are the tokens not used.
-- KEYS[1] the queue's limits hash sd:{Q#0}:limits (the other keys: includes/limit_state.lua)
-- ARGV[1] topic, ARGV[2] grant id (as given to acquireLimit), then 2 values per entry taken:
-- lease member '<p>:<entry id>', ttr ms
-- Returns the positions (1..n) of entries that hold no lease: their grant expired before this
-- call and the concurrency limit is full now; the caller hands those entries back (not an
-- attempt). Empty when the topic has no concurrency limit.
-- Errors: 'SDERR WRONG_TYPE <key> <type>' (checked before any write), 'SDERR BAD_ARGS'.
-- Retry-safe: a lease already named is only moved on; the grant key is gone after the first
-- call, so tokens are handed back once.
-- @include server_time
-- @include limit_check
-- @include limit_state

local topic, grant = ARGV[1], ARGV[2]
if not grant or grant == '' or (#ARGV - 2) % 2 ~= 0 then return redis.error_reply('SDERR BAD_ARGS') end
check_limit_keys(topic); check_limit_type(grant_key(grant), 'string')
local count, per, conc = limit_state(topic)
local now = server_time()
local lk = lease_zset(topic)
local gk = grant_key(grant)
local granted, took_tokens = 0, false
local g = redis.call('GET', gk)
if g then
  local n, t = string.match(g, '^(%d+)|(%d)$')
  granted, took_tokens = tonumber(n) or 0, t == '1'
  redis.call('DEL', gk)
end
local n = (#ARGV - 2) / 2
local unleased, cleaned = {}, false
for i = 1, n do
  local m, ttr = ARGV[1 + 2 * i], tonumber(ARGV[2 + 2 * i]) or 60000
  if redis.call('ZSCORE', lk, m) then
    redis.call('ZADD', lk, 'XX', now + ttr, m)
  elseif redis.call('ZREM', lk, '~' .. grant .. ':' .. i) == 1 then
    redis.call('ZADD', lk, now + ttr, m)
  elseif conc then -- its unnamed lease expired meanwhile: a free one, or none
    if not cleaned then redis.call('ZREMRANGEBYSCORE', lk, '-inf', now); cleaned = true end
    if redis.call('ZCARD', lk) < conc then
      redis.call('ZADD', lk, now + ttr, m)
    else
      unleased[#unleased + 1] = i
    end
  end
end
local freed = 0
for i = n + 1, granted do freed = freed + redis.call('ZREM', lk, '~' .. grant .. ':' .. i) end
wake_waiters(topic, freed)
if took_tokens and granted > n and count and per then
  local bk = lease_bucket(topic)
  local b = redis.call('HMGET', bk, 'tokens', 'ts')
  local tokens, ts = tonumber(b[1]), tonumber(b[2]) or now
  if tokens then
    if now > ts then tokens = tokens + (now - ts) * count / per end
    tokens = math.min(count, tokens + granted - n)
    redis.call('HSET', bk, 'tokens', string.format('%.6f', tokens), 'ts', math.max(now, ts))
  end
end
return unleased
