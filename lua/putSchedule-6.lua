#!lua
-- putSchedule-6: declare a schedule, or change its spec (compare-and-set on the version read).
-- KEYS: the six partition keys (includes/keys.lua); writes PREFIX..'sched', 'sched:next', wake.
-- ARGV[1] name, ARGV[2] expected 'version:next' as read ('' = no record), ARGV[3] new version,
-- ARGV[4] next tick ms (computed by the caller from the spec, after max(now, last tick)),
-- ARGV[5] spec (opaque).
-- Returns {status}: 0 unchanged (same version: declaring again is a no-op), 1 written,
-- -1 conflict (the record changed since it was read: read again and retry).
-- Ticks already enqueued stay; the new spec applies from the next tick (docs/schedules.md).
-- Errors: 'SDERR WRONG_TYPE <key> <type>' (nothing written).
-- Retry-safe: a repeated call finds the new version and returns 0.
-- @include keys
-- @include parse_schedule
-- @include build_schedule
-- @include index_schedule

local name, expect, version, nxt, spec = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), ARGV[5]
check_partition_keys()
check_schedule_keys()
local raw = redis.call('HGET', K_SCHED, name)
local s = parse_schedule(raw)
if s and s.version == version then return {0} end
local current = s and (s.version .. ':' .. string.format('%d', s.next)) or ''
if raw and not s then current = '?' end
if current ~= expect then return {-1} end
if not s then s = {last = 0, paused = '0', ahead = {}} end
s.next, s.version, s.spec = nxt, version, spec
redis.call('HSET', K_SCHED, name, build_schedule(s))
index_schedule(name, s)
if s.paused == '0' and nxt >= 0 then redis.call('ZADD', K_WAKE, nxt, 'w') end
return {1}
