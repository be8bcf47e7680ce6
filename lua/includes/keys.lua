-- Every mutating script takes the same six KEYS of one partition (one hash tag, one slot):
--   KEYS[1] delayed (zset id -> due ms)   KEYS[2] jobs (hash id -> record)
--   KEYS[3] wake (zset marker for BZPOPMIN) KEYS[4] counts (hash topic -> delayed count)
--   KEYS[5] groups (hash topic -> group)   KEYS[6] done (zset id -> tombstone expiry ms)
-- Derived keys share the hash tag: PREFIX .. 't:' .. topic (topic stream) and
-- PREFIX .. 'dead:' .. topic (dead-letter stream), PREFIX being KEYS[2] without 'jobs'.
local K_DELAYED, K_JOBS, K_WAKE, K_COUNTS, K_GROUPS, K_DONE = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local PREFIX = string.sub(K_JOBS, 1, -5)
local function stream_key(topic) return PREFIX .. 't:' .. topic end
local function dead_key(topic) return PREFIX .. 'dead:' .. topic end
-- Job options (docs/keys.md#job-options): K_OPTS (hash job id -> '<priority>|<deadline_ms>|<key>',
-- only for a job that has any) and K_STAGED (hash topic -> 1: a topic that ever had a job with a
-- priority other than 5 or a key); a queue that never used options has neither key.
local K_OPTS, K_STAGED = PREFIX .. 'opts', PREFIX .. 'staged'

-- refuse_wrong_type(key, want): a key another client filled with a value of another type stops
-- the call with 'SDERR WRONG_TYPE <key> <type>' before its first write, so a call that fails
-- writes nothing (docs/keys.md); it returns the key's type. check_partition_keys() does it for
-- the six KEYS and returns true when K_DONE exists (a caller may skip its tombstone purge).
local function refuse_wrong_type(key, want)
  local t = redis.call('TYPE', key).ok
  if t ~= 'none' and t ~= want then error({err = 'SDERR WRONG_TYPE ' .. key .. ' ' .. t}) end
  return t
end
local function check_partition_keys()
  refuse_wrong_type(K_DELAYED, 'zset'); refuse_wrong_type(K_JOBS, 'hash')
  refuse_wrong_type(K_WAKE, 'zset'); refuse_wrong_type(K_COUNTS, 'hash')
  refuse_wrong_type(K_GROUPS, 'hash')
  return refuse_wrong_type(K_DONE, 'zset') ~= 'none'
end
