#!lua
-- enqueueJob-6: the one-job fast path of enqueueJobs-6 (docs/keys.md#the-one-job-enqueue): add
-- one job whose id is free. Same record and keys as enqueueJobs; it never replaces, never reads
-- an old record and never purges tombstones: when the id is taken (a job, a tombstone, or
-- replace is wanted) it writes nothing and answers 0, and the caller sends the job again through
-- enqueueJobs, which has the whole logic (a second round trip only in that case).
-- KEYS: the six partition keys (includes/keys.lua); writes delayed, jobs, wake, counts only.
-- ARGV[1] past tolerance ms for an absolute due time
-- ARGV[2..8] id, topic, when_kind ('r' | 'a'), when_ms, ttr_ms, max_attempts, blob
-- Returns {{1, due_ms, 'd'}} (the reply enqueueJobs gives for one created job), or 0 when the
-- id is taken (nothing written).
-- Errors: 'SDERR AT_IN_PAST <id>', 'SDERR BAD_ARGS', 'SDERR WRONG_TYPE <key> <type>' (checked
-- before any write: the jobs hash by the first write itself, which fails alone).
-- Side effects: HSETNX jobs, ZADD delayed, HINCRBY counts, ZADD wake when the job is the head.
-- Retry-safe: a repeated call finds the id taken and answers 0 (the caller then asks enqueueJobs,
-- which reports created=0).
-- @include server_time
-- @include keys
-- @include due_after
-- @include resolve_due
-- @include new_record
-- @include wake_if_head

if #ARGV ~= 8 then return redis.error_reply('SDERR BAD_ARGS') end
local tolerance, id, topic = tonumber(ARGV[1]), ARGV[2], ARGV[3]
local when_ms, ttr, max = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
if not (tolerance and when_ms and ttr and max) then return redis.error_reply('SDERR BAD_ARGS') end
local now, now_us = server_time()
local due = resolve_due(ARGV[4], when_ms, now, now_us, tolerance)
if not due then return redis.error_reply('SDERR AT_IN_PAST ' .. id) end
refuse_wrong_type(K_DELAYED, 'zset'); refuse_wrong_type(K_WAKE, 'zset')
refuse_wrong_type(K_COUNTS, 'hash')
-- the first write doubles as the jobs hash's type check: when it fails nothing is written
local fresh = redis.pcall('HSETNX', K_JOBS, id,
                          new_record(due, due_after(now_us, 0), ttr, max, topic, ARGV[8]))
if type(fresh) == 'table' then
  refuse_wrong_type(K_JOBS, 'hash')
  return redis.error_reply(fresh.err)
end
if fresh == 0 then return 0 end
redis.call('ZADD', K_DELAYED, due, id)
redis.call('HINCRBY', K_COUNTS, topic, 1)
wake_if_head(id, due)
return {{1, due, 'd'}}
