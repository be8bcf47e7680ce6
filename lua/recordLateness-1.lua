#!lua
-- recordLateness-1: add one worker's lateness bucket counts to the current minute of a queue
-- (docs/dashboard.md#lateness). Called every few seconds per worker, never per job.
-- KEYS[1] the queue's lateness base, partition 0's PREFIX..'lateness'. The counts go to the
--         derived hash KEYS[1]..':'..<minute> (same hash tag; minute = server epoch ms // 60000),
--         field '<bucket index>:<topic>' -> count. Which flushes were applied is kept in the
--         derived hash KEYS[1]..':seen:'..<minute>: flusher -> the sequence number of its last
--         flush in that minute. It expires SEEN_S seconds (at most keep) after its first write,
--         whatever flushes follow, so the field of a worker that is gone leaves at most SEEN_S
--         seconds later, while a retried call (a retry gives up after 30 s,
--         telemetry/lateness.py) still finds its flush in this or the last minute's hash. KEYS[1]
--         itself is never written.
-- ARGV[1] keep seconds (the expiry of the counts), ARGV[2] flusher (the worker's consumer
--         name), ARGV[3] sequence number of this flush (grows per flusher), then triples:
--         topic, bucket index, count.
-- Flags: none beyond the shebang (it adds memory: refused whole under maxmemory; a worker drops
--        that flush).
-- Returns the minute written, or 0 when this flusher's sequence number was applied already.
-- Errors: 'SDERR WRONG_TYPE <key> <type>' (checked before any write), 'SDERR BAD_ARGS'.
-- History (docs/dashboard.md#totals): an outcome triple (bucket 'ok', 'retried' or 'dead') also
--         adds its count, whatever the topic, to the derived hash KEYS[1]..':day:'..<day> (day =
--         minute // 1440) under '<minute>:<outcome>' and 'h<hour>:<outcome>' (hour = minute //
--         60), and to KEYS[1]..':total' under '<outcome>' (the queue's totals, 3 fields). A day
--         hash expires HISTORY_DAYS days after its day ends (EXPIRE, set on each write), and
--         the writer deletes the day hash HISTORY_DAYS + 1 days back, so at most 8 day hashes
--         of at most 1464 * 3 fields are kept per queue.
-- Retry-safe: the same (flusher, sequence) is applied once. Bounded: one field per topic and
-- bucket of the caller's counts, and one per worker that flushed in the last SEEN_S seconds.
-- @include server_time

local base, keep, flusher, seq = KEYS[1], tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
if keep == nil or seq == nil or (#ARGV - 3) % 3 ~= 0 then
  return redis.error_reply('SDERR BAD_ARGS recordLateness')
end
local SEEN_S = 180 -- covers a retry across a minute's end; a seen hash is read one minute on
local now_ms = server_time()
local minute = math.floor(now_ms / 60000)
local key = base .. ':' .. minute
local seen, seen_before = base .. ':seen:' .. minute, base .. ':seen:' .. (minute - 1)
local HISTORY_DAYS = 7
local day = math.floor(minute / 1440)
local history, total = base .. ':day:' .. day, base .. ':total'
for _, k in ipairs({base, key, seen, seen_before, history, total}) do
  local t = redis.call('TYPE', k).ok
  if t ~= 'none' and t ~= 'hash' then error({err = 'SDERR WRONG_TYPE ' .. k .. ' ' .. t}) end
end
for _, k in ipairs({seen, seen_before}) do
  if seq <= tonumber(redis.call('HGET', k, flusher) or '-1') then return 0 end
end
local settled = {} -- outcome -> count over every topic: three writes each, not per topic
for i = 4, #ARGV, 3 do
  redis.call('HINCRBY', key, ARGV[i + 1] .. ':' .. ARGV[i], ARGV[i + 2])
  local o = ARGV[i + 1]
  if o == 'ok' or o == 'retried' or o == 'dead' then
    settled[o] = (settled[o] or 0) + tonumber(ARGV[i + 2])
  end
end
if next(settled) ~= nil then
  for o, n in pairs(settled) do
    redis.call('HINCRBY', history, minute .. ':' .. o, n)
    redis.call('HINCRBY', history, 'h' .. math.floor(minute / 60) .. ':' .. o, n)
    redis.call('HINCRBY', total, o, n)
  end
  -- an EXPIRE to the same instant as EXPIREAT (day + 8) * 86400 would set: the ACL of
  -- docs/security.md lists EXPIRE, not EXPIREAT
  redis.call('EXPIRE', history, (day + 1 + HISTORY_DAYS) * 86400 - math.floor(now_ms / 1000))
  redis.call('DEL', base .. ':day:' .. (day - HISTORY_DAYS - 1))
end
redis.call('EXPIRE', key, keep)
redis.call('HSET', seen, flusher, seq)
-- NX: counted from the hash's first flush, not moved on by later ones, so the field of a worker
-- that is gone leaves with it at most SEEN_S seconds later
redis.call('EXPIRE', seen, math.min(SEEN_S, keep), 'NX')
return minute
