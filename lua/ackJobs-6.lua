#!lua flags=allow-oom
-- ackJobs-6: settle a batch of successfully handled deliveries.
-- KEYS: the six partition keys (includes/keys.lua); touches PREFIX..'t:'..topic.
-- ARGV[1] group, ARGV[2] keep_done ms (0: forget the job; > 0: keep a 'c' tombstone that long)
-- then 3 values per delivery: topic, job id, stream entry id
-- Returns the number of deliveries that were still current (a cancelled, replaced or reclaimed
-- job's stale delivery is acknowledged in the stream but leaves the job alone).
-- Also forgets expired tombstones: at least as many as the call could create, plus 100.
-- Errors: 'SDERR WRONG_TYPE <key> <type>' (checked before any write).
-- Flags: allow-oom, as it frees memory (a tombstone is a record the call already had).
-- Retry-safe: a repeated call finds nothing current and returns 0.
-- @include server_time
-- @include keys
-- @include release_lease
-- @include read_records
-- @include write_many
-- @include purge_done
-- @include build_record
-- @include parse_record

local now = server_time()
local group, keep = ARGV[1], tonumber(ARGV[2])
local settled = 0
check_partition_keys()
for b = 3, #ARGV, 3 do refuse_wrong_type(stream_key(ARGV[b]), 'stream'); check_lease_keys(ARGV[b]) end
for b = 3, #ARGV, 3 do
  local topic, id, eid = ARGV[b], ARGV[b + 1], ARGV[b + 2]
  local sk = stream_key(topic)
  redis.call('XACK', sk, group, eid)
  redis.call('XDEL', sk, eid)
  release_lease(topic, eid)
  local r = parse_record(redis.call('HGET', K_JOBS, id))
  if r and r.state == 's' and r.entry == eid then
    if keep > 0 then
      r.state, r.entry = 'c', ''
      redis.call('HSET', K_JOBS, id, build_record(r))
      redis.call('ZADD', K_DONE, now + keep, id)
    else
      redis.call('HDEL', K_JOBS, id)
    end
    settled = settled + 1
  end
end
purge_done(now, (#ARGV - 2) / 3 + 100)
return settled
