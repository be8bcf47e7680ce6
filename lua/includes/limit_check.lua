-- limit_check(spec, leases, bucket, now, wanted) -> tl: the one rule of a topic's own rate and
-- concurrency limit (docs/limits.md), for every script that takes under it: takeLimited and
-- takeStaged (partition 0, through includes/topic_limit.lua) and acquireLimit (partition p != 0,
-- through includes/limit_state.lua). The caller names the keys (both in partition 0's slot):
--   spec    the topic's field of the limits hash, 'count|per_ms|concurrency' (an empty part:
--           not limited so; written by setLimit), or nil/false: no limit
--   leases  zset lease member -> expiry (ms); expired leases are dropped here (a write: call it
--           after the type checks)
--   bucket  hash tokens, ts (ms): the token bucket, capacity = count, refilled continuously
-- tl = {k = how many may start now (0..wanted), reason = 0 all wanted / 1 the rate holds back /
-- 2 the concurrency holds back, wait = ms until that may change (1 at least; 0 with reason 0),
-- count, per, conc (nil where not limited so), tokens (the bucket now, nil without a rate),
-- bucket}. limit_spec(spec) -> count, per, conc reads a limits field; limit_spend(tl, n, now)
-- takes n tokens from the bucket (nothing without a rate): the state limit_check reads next.
local function limit_spec(spec)
  if not spec then return nil, nil, nil end
  local c, p, n = string.match(spec, '^(%d*)|(%d*)|(%d*)$')
  return tonumber(c), tonumber(p), tonumber(n)
end
local function limit_check(spec, leases, bucket, now, wanted)
  local tl = {k = wanted, reason = 0, wait = 0, bucket = bucket}
  tl.count, tl.per, tl.conc = limit_spec(spec)
  if tl.conc then
    redis.call('ZREMRANGEBYSCORE', leases, '-inf', now)
    local free = tl.conc - redis.call('ZCARD', leases)
    if free < tl.k then
      tl.k, tl.reason = math.max(free, 0), 2
      local first = redis.call('ZRANGE', leases, 0, 0, 'WITHSCORES')
      tl.wait = first[2] and math.max(tonumber(first[2]) - now, 1) or 1
    end
  end
  if tl.count and tl.per then
    local b = redis.call('HMGET', bucket, 'tokens', 'ts')
    local tokens = tonumber(b[1]) or tl.count
    local ts = tonumber(b[2]) or now
    if now > ts then tokens = math.min(tl.count, tokens + (now - ts) * tl.count / tl.per) end
    tl.tokens = tokens
    local whole = math.floor(tokens)
    if whole < tl.k then
      tl.k, tl.reason = whole, 1
      tl.wait = math.max(math.ceil((1 - (tokens - whole)) * tl.per / tl.count), 1)
    end
  end
  return tl
end
local function limit_spend(tl, n, now)
  if tl.tokens then
    redis.call('HSET', tl.bucket, 'tokens', string.format('%.6f', tl.tokens - n), 'ts', now)
  end
end
