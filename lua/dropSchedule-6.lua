#!lua flags=allow-oom
-- dropSchedule-6: remove a schedule and cancel its ticks that are enqueued but not yet due.
-- KEYS: the six partition keys (includes/keys.lua); writes PREFIX..'sched', 'sched:next'.
-- ARGV[1] name
-- Returns {existed (1|0), ticks cancelled}. Retry-safe: a repeat returns {0, 0}.
-- Errors: 'SDERR WRONG_TYPE <key> <type>' (nothing written).
-- Flags: allow-oom, as it frees memory.
-- @include server_time
-- @include keys
-- @include staging
-- @include detach
-- @include parse_record
-- @include parse_schedule
-- @include cancel_ahead

local now = server_time()
local name = ARGV[1]
check_partition_keys()
check_schedule_keys()
local raw = redis.call('HGET', K_SCHED, name)
if not raw then return {0, 0} end
local s = parse_schedule(raw)
local cancelled = 0
if s then cancelled = cancel_ahead(s, name, now, false) end
redis.call('HDEL', K_SCHED, name)
redis.call('ZREM', K_SCHED_NEXT, name)
return {1, cancelled}
