#!lua
-- enqueueJob-6: the one-job fast path of enqueueJobs-6 (docs/keys.md#the-one-job-enqueue): add
-- one job whose id is free, with as few Redis calls as that takes (TIME, HSETNX, ZADD, ZRANGE,
-- HINCRBY; ZSCORE + ZADD of the wake marker only when the job becomes the head). Same record and
-- keys as enqueueJobs; it never replaces, never reads an old record and never purges tombstones:
-- when the id is taken (a job, a tombstone, or replace is wanted) it writes nothing and answers
-- 0, and the caller sends the job again through enqueueJobs, which has the whole logic (a second
-- round trip only in that case).
-- A job with options (priority, fairness key, expiry; docs/keys.md#job-options) passes them as
-- a ninth ARGV: its field in PREFIX..'opts' is written and, for a priority other than 5 or a
-- key, its topic's flag in PREFIX..'staged'. A plain job passes eight and pays nothing for them.
-- KEYS: the six partition keys (includes/keys.lua); writes delayed, jobs, wake, counts, and with
-- options PREFIX..'opts', PREFIX..'staged' (includes/drop_opts.lua).
-- ARGV[1] past tolerance ms for an absolute due time
-- ARGV[2..8] id, topic, when_kind ('r' | 'a'), when_ms, ttr_ms, max_attempts, blob
-- ARGV[9] (optional) opts: '<priority 0-9>|<expires_ms or empty>|<key or empty>'; stored as
-- '<priority>|<due_ms + expires_ms or empty>|<key>' (the deadline on the Redis clock).
-- Returns the due time in epoch ms when the job was written, 0 when the id is taken (nothing
-- written).
-- Errors: 'SDERR AT_IN_PAST <id>', 'SDERR BAD_ARGS', 'SDERR WRONG_TYPE <key> <type>'. The opts
-- and staged keys (with options) are type-checked before any write; the others are not: each
-- write is a pcall and, when one fails (a key of another type, a counts field that is not a
-- number), the writes before it are taken back in this same call, so a call that fails leaves
-- nothing written (docs/keys.md#the-one-job-enqueue).
-- Side effects: HSETNX jobs, ZADD delayed, HINCRBY counts, ZADD wake when the job is the head;
-- with options HSET opts, HSET staged (priority other than 5 or a key).
-- Retry-safe: a repeated call finds the id taken and answers 0 (the caller then asks enqueueJobs,
-- which reports created=0).
-- Events (docs/events.md): 'enqueued' (detail: the due time), when the queue keeps events.
-- @include server_time
-- @include keys
-- @include due_after
-- @include resolve_due
-- @include new_record
-- @include emit_event
-- @include opts_arg

local with_opts = #ARGV == 9
if #ARGV ~= 8 and not with_opts then return redis.error_reply('SDERR BAD_ARGS') end
local tolerance, id, topic = tonumber(ARGV[1]), ARGV[2], ARGV[3]
local when_ms, ttr, max = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
if not (tolerance and when_ms and ttr and max) then return redis.error_reply('SDERR BAD_ARGS') end
local priority, expires_ms, key = nil, nil, nil
if with_opts then
  priority, expires_ms, key = opts_arg(ARGV[9])
  if not priority then return redis.error_reply('SDERR BAD_ARGS') end
  refuse_wrong_type(K_OPTS, 'hash'); refuse_wrong_type(K_STAGED, 'hash')
end
local now, now_us = server_time()
local due = resolve_due(ARGV[4], when_ms, now, now_us, tolerance)
if not due then return redis.error_reply('SDERR AT_IN_PAST ' .. id) end

-- A write that failed: 'SDERR WRONG_TYPE <key> <type>' when key holds another type, else the
-- error itself (a counts field that is not a number, OOM before the first write).
local function refused(key, want, failed)
  local t = redis.call('TYPE', key).ok
  if t ~= 'none' and t ~= want then return redis.error_reply('SDERR WRONG_TYPE ' .. key .. ' ' .. t) end
  return redis.error_reply(failed.err)
end

local fresh = redis.pcall('HSETNX', K_JOBS, id,
                          new_record(due, due_after(now_us, 0), ttr, max, topic, ARGV[8]))
if type(fresh) == 'table' then return refused(K_JOBS, 'hash', fresh) end -- nothing written
if fresh == 0 then return 0 end
local added = redis.pcall('ZADD', K_DELAYED, due, id)
if type(added) == 'table' then
  redis.call('HDEL', K_JOBS, id)
  return refused(K_DELAYED, 'zset', added)
end
-- the head check: the earliest delayed job is this one, so a dispatcher blocked in BZPOPMIN
-- on the wake marker must re-read its sleep (the marker's old score is kept to take it back)
local woke, old_wake = false, nil
if redis.call('ZRANGE', K_DELAYED, 0, 0)[1] == id then
  old_wake = redis.pcall('ZSCORE', K_WAKE, 'w')
  local set = type(old_wake) ~= 'table' and redis.pcall('ZADD', K_WAKE, due, 'w') or old_wake
  if type(set) == 'table' then
    redis.call('HDEL', K_JOBS, id); redis.call('ZREM', K_DELAYED, id)
    return refused(K_WAKE, 'zset', set)
  end
  woke = true
end
local counted = redis.pcall('HINCRBY', K_COUNTS, topic, 1)
if type(counted) == 'table' then
  redis.call('HDEL', K_JOBS, id); redis.call('ZREM', K_DELAYED, id)
  if woke and old_wake then redis.call('ZADD', K_WAKE, old_wake, 'w')
  elseif woke then redis.call('ZREM', K_WAKE, 'w') end
  return refused(K_COUNTS, 'hash', counted)
end
if with_opts then
  redis.call('HSET', K_OPTS, id, priority .. '|' .. (expires_ms and (due + expires_ms) or '') .. '|' .. key)
  if priority ~= 5 or key ~= '' then redis.call('HSET', K_STAGED, topic, 1) end
end
emit_event('enqueued', id, topic, 0, due, now)
return due
