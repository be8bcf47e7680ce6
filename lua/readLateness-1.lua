#!lua flags=no-writes
-- readLateness-1: the lateness bucket counts of a queue's last minutes (docs/dashboard.md#lateness).
-- KEYS[1] the queue's lateness base, partition 0's PREFIX..'lateness'; reads the derived hashes
--         KEYS[1]..':'..<minute> (same hash tag) written by recordLateness.
-- ARGV[1] how many minutes, the current one included (1-60).
-- Flags: no-writes (read only).
-- Returns [now_ms, minute, fields, minute, fields, ...] oldest minute first, fields being the
-- hash as a flat [field, count, ...] list (empty for a minute nobody wrote).
-- Errors: 'SDERR BAD_ARGS'. Bounded: at most 60 hashes of one field per topic and bucket.
-- @include server_time

local minutes = tonumber(ARGV[1])
if minutes == nil or minutes < 1 or minutes > 60 then
  return redis.error_reply('SDERR BAD_ARGS readLateness')
end
local now = server_time()
local current = math.floor(now / 60000)
local reply = {now}
for m = current - minutes + 1, current do
  local key = KEYS[1] .. ':' .. m
  local fields = {}
  if redis.call('TYPE', key).ok == 'hash' then fields = redis.call('HGETALL', key) end
  reply[#reply + 1] = m
  reply[#reply + 1] = fields
end
return reply
