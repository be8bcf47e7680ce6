#!lua flags=allow-oom
-- ackJobsV4-6: settle a batch of successfully handled deliveries, keeping their results, with
-- the time each was read.
-- KEYS: the six partition keys (includes/keys.lua); touches PREFIX..'t:'..topic, and for a kept
-- result PREFIX..'r:'..id and PREFIX..'w:'..id (includes/keep_result.lua).
-- ARGV[1] group, ARGV[2] keep_done ms (0: forget the job; > 0: keep a 'c' tombstone that long),
-- ARGV[3] N, the number of deliveries, then 3 values per delivery: topic, job id, stream entry
-- id; then the read times, as runs: R, then R pairs (count >= 1, read time), the counts
-- summing to N (R = 0: none given), count deliveries in a row sharing one time (those of one
-- read do). A read time (epoch ms, server clock; 0 unknown) is when a consumer read the
-- delivery fresh, with no heartbeat sent for it since; then 3 values per kept result: the
-- delivery's position (1..N), keep_result ms, the result (a format letter and the encoded value).
-- ackJobsV3's ARGV plus the read times: what lets 'started' be written without reading the
-- pending list (docs/events.md#started).
-- Returns the number of deliveries that were still current (a cancelled, replaced or reclaimed
-- job's stale delivery is acknowledged in the stream but leaves the job alone, except that a job
-- held behind it, rescheduled or replaced while it ran, is freed: includes/hold.lua).
-- A job that ended drops its options (PREFIX..'opts', includes/drop_opts.lua: one EXISTS when the
-- partition has none).
-- Also forgets expired tombstones: at least as many as the call could create, plus 100.
-- Batched: one XACK and one XDEL per topic, one HMGET of every record, one HDEL (or HSET and
-- ZADD for tombstones) for the batch; a job named twice settles once, as one call per delivery
-- would.
-- Errors: 'SDERR WRONG_TYPE <key> <type>' (checked before any write).
-- Flags: allow-oom, as it frees memory (a tombstone is a record the call already had).
-- Retry-safe: a repeated call finds nothing current and returns 0.
-- Layout 2: with keep_done, a header-only record (docs/keys.md#layouts) gets its blob from its
-- stream entry before the entry is deleted, so the tombstone keeps the body as in layout 1; a
-- call without keep_done reads no entry.
-- Events (docs/events.md): 'started' (at its read time when given, else when no heartbeat
--  reported it) and 'succeeded' per current delivery, when the queue keeps events.
-- Workflows (docs/workflows.md): on a partition that keeps outcomes, each job settled keeps its
-- outcome and tells its waiters (includes/flow.lua). The events and workflow switches are read
-- with one HMGET per call (includes/read_switches.lua).
-- @include server_time
-- @include keys
-- @include release_lease
-- @include read_records
-- @include write_many
-- @include purge_done
-- @include build_record
-- @include parse_record
-- @include hmget_many
-- @include full_record
-- @include keep_result
-- @include wake_if_head
-- @include hold
-- @include emit_event
-- @include emit_started
-- @include drop_opts
-- @include flow_keep
-- @include read_switches

-- flow_lib(): flow_ended of the workflow helpers (includes/flow.lua), built only when a job
-- ends on a partition that keeps outcomes: built at the top, their closures would cost every
-- call of a plain queue (docs/benchmarks.md, History 2026-11-26 22:36-23:41)
local function flow_lib()
-- @include new_record
-- @include blob_keep
-- @include dead_result
-- @include flow
  return flow_ended
end

-- The body, shared with ackJobsV3.
-- @include ack_batch
return ack_batch(true)
