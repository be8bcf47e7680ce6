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
-- A straight line: the includes it needs are inlined here (server_time, due_after, resolve_due,
-- new_record, opts_arg, and the one-event write of emit_event), since every helper an include
-- defines is built again on every EVALSHA, and a one-job call pays for each (docs/keys.md#includes;
-- docs/benchmarks.md#life). Keep them in step with those includes.
-- The keys of includes/keys.lua (K_DELAYED, K_JOBS, K_WAKE, K_COUNTS, PREFIX, K_OPTS, K_STAGED),
-- without its helpers (built on every call otherwise)
local ARGV = ARGV -- a local: read several times (a global is a table lookup each)
local delayed_key, jobs_key, wake_key, counts_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local prefix = string.sub(jobs_key, 1, -5)

local with_opts = #ARGV == 9
if #ARGV ~= 8 and not with_opts then return redis.error_reply('SDERR BAD_ARGS') end
local tolerance, id, topic = tonumber(ARGV[1]), ARGV[2], ARGV[3]
local when_ms, ttr, max = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
if not (tolerance and when_ms and ttr and max) then return redis.error_reply('SDERR BAD_ARGS') end
local priority, expires_ms, key, opts_key, staged_key = nil, nil, nil, nil, nil
-- the options, as includes/opts_arg.lua reads them
if with_opts then
  opts_key, staged_key = prefix .. 'opts', prefix .. 'staged'
  local p, e, k = string.match(ARGV[9], '^([0-9])|(%d*)|([A-Za-z0-9_.:@/+=-]*)$')
  if not p or #e > 15 or #k > 64 then return redis.error_reply('SDERR BAD_ARGS') end
  priority, expires_ms, key = tonumber(p), tonumber(e), k
  for _, k_opt in ipairs({opts_key, staged_key}) do
    local t = redis.call('TYPE', k_opt).ok
    if t ~= 'none' and t ~= 'hash' then return redis.error_reply('SDERR WRONG_TYPE ' .. k_opt .. ' ' .. t) end
  end
end
-- includes/server_time.lua, due_after.lua, resolve_due.lua
local time, floor, format = redis.call('TIME'), math.floor, string.format
local sec, usec = tonumber(time[1]), tonumber(time[2])
local now, now_us = sec * 1000 + floor(usec / 1000), sec * 1000000 + usec
local due
if ARGV[4] == 'r' then due = floor((now_us + when_ms * 1000 + 999) / 1000)
elseif when_ms < now - tolerance then return redis.error_reply('SDERR AT_IN_PAST ' .. id)
else due = when_ms end
-- every number goes to Redis as text: Redis makes a Lua number an argument with '%.17g', which
-- costs more than the rest of a call's Lua (docs/keys.md#the-one-job-enqueue); the due time's
-- text serves the record and the score, unless it is not that number (a fraction, inf, NaN or
-- past 2^53: the score stays the number, as before)
local due_text = format('%d', due)
local score = due_text
if due % 1 ~= 0 or due > 9007199254740992 or due < -9007199254740992 then score = due end

-- the error of a failed write, naming the key when it holds another type (no upvalues: cheap to
-- make on every call)
local function refused(key, want, failed)
  local t = redis.call('TYPE', key).ok
  if t ~= 'none' and t ~= want then return redis.error_reply('SDERR WRONG_TYPE ' .. key .. ' ' .. t) end
  return redis.error_reply(failed.err)
end

-- includes/new_record.lua (created: due_after(now_us, 0))
local fresh = redis.pcall('HSETNX', jobs_key, id,
                          'd|0|' .. due_text .. format('|%d|%d|%d||', floor((now_us + 999) / 1000),
                                                       ttr, max) .. topic .. '|' .. ARGV[8])
if type(fresh) == 'table' then return refused(jobs_key, 'hash', fresh) end -- nothing written
if fresh == 0 then return 0 end
local added = redis.pcall('ZADD', delayed_key, score, id)
if type(added) == 'table' then
  redis.call('HDEL', jobs_key, id)
  return refused(delayed_key, 'zset', added)
end
local woke, old_wake = false, nil
-- the new head ('0' as text: see above; ZRANGE, not ZRANK, which the ACL of
-- docs/security.md does not grant)
if redis.call('ZRANGE', delayed_key, '0', '0')[1] == id then
  old_wake = redis.pcall('ZSCORE', wake_key, 'w')
  local set = type(old_wake) ~= 'table' and redis.pcall('ZADD', wake_key, score, 'w') or old_wake
  if type(set) == 'table' then
    redis.call('HDEL', jobs_key, id); redis.call('ZREM', delayed_key, id)
    return refused(wake_key, 'zset', set)
  end
  woke = true
end
local counted = redis.pcall('HINCRBY', counts_key, topic, '1')
if type(counted) == 'table' then
  redis.call('HDEL', jobs_key, id); redis.call('ZREM', delayed_key, id)
  if woke and old_wake then redis.call('ZADD', wake_key, old_wake, 'w')
  elseif woke then redis.call('ZREM', wake_key, 'w') end
  return refused(counts_key, 'hash', counted)
end
if with_opts then
  redis.call('HSET', opts_key, id, priority .. '|' .. (expires_ms and (due + expires_ms) or '') .. '|' .. key)
  if priority ~= 5 or key ~= '' then redis.call('HSET', staged_key, topic, 1) end
end
-- the 'enqueued' event, written alone as includes/emit_event.lua's event_alone does: the switch
-- is field 'events' of the meta hash (absent, '0' or not a number: off), numbers sent as text
local bound = redis.pcall('HGET', prefix .. 'meta', 'events')
bound = type(bound) == 'string' and tonumber(bound) or 0
if bound > 0 then
  redis.pcall('XADD', prefix .. 'events', 'MAXLEN', '~', string.format('%d', bound), '*',
              'k', 'enqueued', 'i', id, 't', topic, 'a', '0', 'at', string.format('%d', now),
              'd', due_text)
end
return due
