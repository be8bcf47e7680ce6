#!lua flags=allow-oom
-- cancelJob-6: remove one job in any state (delayed, ready, reserved, dead). A running handler may
-- finish; its acknowledgement is then a no-op. A done tombstone is not a job: returns 0.
-- KEYS: the six partition keys (includes/keys.lua); may touch the topic and dead-letter streams.
-- ARGV[1] job id
-- A malformed record (written by a foreign client) is removed too, with its delayed-set entry.
-- Returns 1 when a job was removed, 0 when there was none. Retry-safe: a repeat returns 0.
-- Errors: 'SDERR WRONG_TYPE <key> <type>' (checked before any write).
-- Flags: allow-oom, as it frees memory: an operator can cancel jobs while Redis is full.
-- Events (docs/events.md): 'cancelled' (detail: the state it left: delayed, ready or running,
--  dead), when the queue keeps events.
-- @include keys
-- @include staging
-- @include detach
-- @include parse_record
-- @include emit_event

local id = ARGV[1]
check_partition_keys()
local raw = redis.call('HGET', K_JOBS, id)
local r = parse_record(raw)
if not r then
  if not raw then return 0 end
  redis.call('ZREM', K_DELAYED, id)
  redis.call('HDEL', K_JOBS, id)
  return 1
end
if r.state == 'c' then return 0 end
if r.state == 's' then refuse_wrong_type(stream_key(r.topic), 'stream') end
if r.state == 'x' then refuse_wrong_type(dead_key(r.topic), 'stream') end
emit_event('cancelled', id, r.topic, r.attempts, ({d = 'delayed', s = 'ready or running', x = 'dead', r = 'ready'})[r.state])
detach(r, id)
redis.call('HDEL', K_JOBS, id)
return 1
