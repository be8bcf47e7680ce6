-- topic_limit(topic, now, wanted) and topic_limit_took(topic, tl, entries, now): a topic's
-- own rate and concurrency (PREFIX..'limits', docs/limits.md) for a take of a queue of one
-- partition, as takeLimited applies them (that script keeps its own text): the check answers
-- {k = how many may start, reason = 0 / 1 rate / 2 concurrency, wait = ms, ...}; the second
-- takes a token and adds a lease (expiring ttr ms from now) per entry taken.
-- @include keys
-- @include release_lease
-- @include parse_record
local function topic_limit(topic, now, wanted)
  local bk = PREFIX .. 'bucket:' .. topic
  refuse_wrong_type(PREFIX .. 'limits', 'hash'); refuse_wrong_type(bk, 'hash')
  check_lease_keys(topic)
  local tl = {k = wanted, reason = 0, wait = 0, bucket = bk}
  local spec = redis.call('HGET', PREFIX .. 'limits', topic)
  if spec then
    local c, p, n = string.match(spec, '^(%d*)|(%d*)|(%d*)$')
    tl.count, tl.per, tl.conc = tonumber(c), tonumber(p), tonumber(n)
  end
  if tl.conc then
    local lk = leases_key(topic)
    redis.call('ZREMRANGEBYSCORE', lk, '-inf', now)
    local free = tl.conc - redis.call('ZCARD', lk)
    if free < tl.k then
      tl.k, tl.reason = math.max(free, 0), 2
      local first = redis.call('ZRANGE', lk, 0, 0, 'WITHSCORES')
      tl.wait = first[2] and math.max(tonumber(first[2]) - now, 1) or 1
    end
  end
  if tl.count and tl.per then
    local b = redis.call('HMGET', bk, 'tokens', 'ts')
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
local function topic_limit_took(topic, tl, entries, now)
  if tl.tokens then
    redis.call('HSET', tl.bucket, 'tokens', string.format('%.6f', tl.tokens - #entries), 'ts', now)
  end
  if tl.conc then
    for i = 1, #entries do
      local eid, fields = entries[i][1], entries[i][2]
      local ttr = 60000
      for f = 1, #fields, 2 do
        if fields[f] == 'rec' then
          local r = parse_record(fields[f + 1])
          if r then ttr = r.ttr end
        end
      end
      redis.call('ZADD', leases_key(topic), now + ttr, eid)
    end
  end
end
