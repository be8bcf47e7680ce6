#!lua flags=allow-oom
-- purgeDead-6: forget dead jobs of one topic (their records and dead-letter entries).
-- KEYS: the six partition keys (includes/keys.lua); touches PREFIX..'dead:'..topic.
-- ARGV[1] topic, ARGV[2] count (bounded batch), ARGV[3] job id ('' = oldest first)
-- A purged job's options go with it (PREFIX..'opts', includes/drop_opts.lua), and so do a dead
-- child's kept parents (PREFIX..'dd:'..id, includes/flow.lua's flow_forget_dead).
-- Returns the ids purged (an empty list when nothing is left). Retry-safe.
-- Errors: 'SDERR WRONG_TYPE <key> <type>' (checked before any write).
-- Flags: allow-oom, as it frees memory: an operator can purge while Redis is full.
-- @include keys
-- @include parse_record
-- @include dead_candidates
-- @include write_many
-- @include drop_opts
-- @include build_record
-- @include new_record
-- @include wake_if_head
-- @include emit_event
-- @include blob_keep
-- @include keep_result
-- @include dead_result
-- @include flow_keep
-- @include flow

local topic, count, only = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local dk = dead_key(topic)
check_partition_keys()
local candidates = dead_candidates(topic, count, only)
local purged, ended = {}, {}
for _, c in ipairs(candidates) do
  local eid, id = c[1], c[2]
  redis.call('XDEL', dk, eid)
  local r = id and parse_record(redis.call('HGET', K_JOBS, id))
  if r and r.state == 'x' and r.entry == eid then
    redis.call('HDEL', K_JOBS, id); ended[#ended + 1] = id
  end
  if id then purged[#purged + 1] = id end
end
drop_opts(ended)
flow_forget_dead(ended)
return purged
