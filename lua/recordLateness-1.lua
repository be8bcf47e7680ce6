#!lua
-- recordLateness-1: add one worker's lateness bucket counts to the current minute of a queue
-- (docs/dashboard.md#lateness). Called every few seconds per worker, never per job.
-- KEYS[1] the queue's lateness base, partition 0's PREFIX..'lateness': a hash flusher -> last
--         sequence number applied (makes a retried call a no-op). The counts go to the derived
--         hash KEYS[1]..':'..<minute> (same hash tag; minute = server epoch ms // 60000), field
--         '<bucket index>:<topic>' -> count.
-- ARGV[1] keep seconds (the expiry of both hashes), ARGV[2] flusher (the worker's consumer
--         name), ARGV[3] sequence number of this flush (grows per flusher), then triples:
--         topic, bucket index, count.
-- Flags: none beyond the shebang (it adds memory: refused whole under maxmemory; a worker drops
--        that flush).
-- Returns the minute written, or 0 when this flusher's sequence number was applied already.
-- Errors: 'SDERR WRONG_TYPE <key> <type>' (checked before any write), 'SDERR BAD_ARGS'.
-- Retry-safe: the same (flusher, sequence) is applied once. Bounded: one field per topic and
-- bucket of the caller's counts.
-- @include server_time

local base, keep, flusher, seq = KEYS[1], tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
if keep == nil or seq == nil or (#ARGV - 3) % 3 ~= 0 then
  return redis.error_reply('SDERR BAD_ARGS recordLateness')
end
local minute = math.floor(server_time() / 60000)
local key = base .. ':' .. minute
for _, k in ipairs({base, key}) do
  local t = redis.call('TYPE', k).ok
  if t ~= 'none' and t ~= 'hash' then error({err = 'SDERR WRONG_TYPE ' .. k .. ' ' .. t}) end
end
local last = tonumber(redis.call('HGET', base, flusher) or '-1')
if seq <= last then return 0 end
for i = 4, #ARGV, 3 do
  redis.call('HINCRBY', key, ARGV[i + 1] .. ':' .. ARGV[i], ARGV[i + 2])
end
redis.call('EXPIRE', key, keep)
redis.call('HSET', base, flusher, seq)
redis.call('EXPIRE', base, keep)
return minute
