-- limit_state(topic) -> count, per_ms, concurrency (nil where not limited so): a topic's
-- stored limit (read by limit_spec of includes/limit_check.lua, the rule every take applies).
-- With it, a topic's limit keys in partition 0's slot, for the one-KEY scripts that take and
-- free leases for a partition other than 0 (acquireLimit, nameLeases, freeLeases, touchLeases:
-- docs/limits.md#more-than-one-partition). KEYS[1] is the queue's limits hash,
-- sd:{Q#0}:limits; the topic's keys share its hash tag (the keys of includes/release_lease.lua):
--   LPFX..'bucket:'..topic    hash tokens, ts: the token bucket of the rate limit
--   LPFX..'leases:'..topic    zset member -> lease expiry (ms): '<entry id>' (a delivery of
--                             partition 0), '<p>:<entry id>' (of partition p), '~<grant>:<i>'
--                             (taken by acquireLimit, not yet named by nameLeases)
--   LPFX..'limitwake:'..topic list: one element per freed lease, for waiting workers (BLPOP)
--   LPFX..'grant:'..grant     string '<granted>|<tokens taken: 0/1>', until nameLeases
-- check_limit_keys(topic) refuses a wrong type of the topic's keys (before any write);
-- wake_waiters(topic, n) pushes n elements (at most 64 kept).
-- @include limit_check
local LPFX = string.sub(KEYS[1], 1, -7)
local function lease_zset(topic) return LPFX .. 'leases:' .. topic end
local function lease_wake(topic) return LPFX .. 'limitwake:' .. topic end
local function lease_bucket(topic) return LPFX .. 'bucket:' .. topic end
local function grant_key(grant) return LPFX .. 'grant:' .. grant end
local function check_limit_type(key, want)
  local t = redis.call('TYPE', key).ok
  if t ~= 'none' and t ~= want then error({err = 'SDERR WRONG_TYPE ' .. key .. ' ' .. t}) end
end
local function check_limit_keys(topic)
  check_limit_type(KEYS[1], 'hash'); check_limit_type(lease_bucket(topic), 'hash')
  check_limit_type(lease_zset(topic), 'zset'); check_limit_type(lease_wake(topic), 'list')
end
local function limit_state(topic) return limit_spec(redis.call('HGET', KEYS[1], topic)) end
local function wake_waiters(topic, n)
  if n <= 0 then return end
  local wk = lease_wake(topic)
  for _ = 1, math.min(n, 64) do redis.call('LPUSH', wk, '1') end
  redis.call('LTRIM', wk, 0, 63)
end
