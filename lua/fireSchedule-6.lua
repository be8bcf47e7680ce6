#!lua
-- fireSchedule-6: enqueue a schedule's next tick(s) and advance its next tick, atomically.
-- KEYS: the six partition keys (includes/keys.lua); writes the schedule's record and the ticks.
-- ARGV[1] name, ARGV[2] version read, ARGV[3] next tick read (the compare-and-set: only the
-- caller that read the current value advances it), ARGV[4] new next tick (-1: none left),
-- ARGV[5] topic, ARGV[6] ttr ms, ARGV[7] max attempts, ARGV[8] blob,
-- then pairs tick_ms, due_ms of the ticks to enqueue (ids name@tick_ms), in order.
-- Returns {created, status}: status 1 advanced, 0 not (record gone, paused, another version or
-- next: another dispatcher was first, or the spec changed; nothing written).
-- A tick whose id already has a record is left as it is (not counted).
-- Errors: 'SDERR WRONG_TYPE <key> <type>', 'SDERR BAD_ARGS' (nothing written).
-- Retry-safe: a repeated call finds next moved and writes nothing.
-- @include server_time
-- @include keys
-- @include new_record
-- @include wake_if_head
-- @include parse_record
-- @include parse_schedule
-- @include build_schedule
-- @include index_schedule

local now = server_time()
local name, version = ARGV[1], ARGV[2]
local expect, nxt = tonumber(ARGV[3]), tonumber(ARGV[4])
local topic, ttr, max, blob = ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[7]), ARGV[8]
if (#ARGV - 8) % 2 ~= 0 or not expect or not nxt then return redis.error_reply('SDERR BAD_ARGS') end
check_partition_keys()
check_schedule_keys()
local s = parse_schedule(redis.call('HGET', K_SCHED, name))
if not s or s.version ~= version or s.next ~= expect or s.paused ~= '0' then return {0, 0} end
local created = 0
local ahead = {}
for _, t in ipairs(s.ahead) do -- keep only the earlier ticks still waiting
  local r = parse_record(redis.call('HGET', K_JOBS, tick_id(name, t)))
  if r and r.state == 'd' and r.due > now then ahead[#ahead + 1] = t end
end
local head_id, head_due = nil, nil
for i = 9, #ARGV, 2 do
  local t, due = tonumber(ARGV[i]), tonumber(ARGV[i + 1])
  local id = tick_id(name, t)
  if redis.call('HEXISTS', K_JOBS, id) == 0 then
    redis.call('HSET', K_JOBS, id, new_record(due, now, ttr, max, topic, blob))
    redis.call('ZADD', K_DELAYED, due, id)
    redis.call('HINCRBY', K_COUNTS, topic, 1)
    created = created + 1
    if not head_due or due < head_due then head_id, head_due = id, due end
    if due > now then ahead[#ahead + 1] = t end
  end
  if t > s.last then s.last = t end
end
s.next, s.ahead = nxt, ahead
redis.call('HSET', K_SCHED, name, build_schedule(s))
index_schedule(name, s)
if head_id then wake_if_head(head_id, head_due) end
return {created, 1}
