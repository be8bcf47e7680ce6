#!lua flags=allow-oom
-- cancelJob-6: remove one job in any state (delayed, ready, reserved, dead). A running handler may
-- finish; its acknowledgement is then a no-op. A done tombstone is not a job: returns 0.
-- Abort (ARGV[3] '1', docs/worker.md#abort): a job in its topic stream (ready or running) also
-- gets a member '<topic>|<entry id>' (score: now) in PREFIX..'aborts', a sorted set the workers
-- holding deliveries of the partition read with their pause watch (every 0.5 s: no round trip
-- per job) to stop the handler, and a pull consumer's touch to say 'aborted'. Bounded: members
-- older than ABORT_KEEP_MS go at each abort, and the key expires that long after the last one.
-- KEYS: the six partition keys (includes/keys.lua); may touch the topic and dead-letter streams.
-- ARGV[1] job id, ARGV[2] keep_result ms for a job whose envelope sets none: a removed job's
-- result (state 'c') is kept for the envelope's keep_result (its 8th element, includes/blob_keep;
-- from the stream entry for a header-only record), else that long, under PREFIX..'r:'..id, and
-- its waiters woken (includes/keep_result.lua). cancelJob's ARGV plus it. ARGV[3] '1': abort
-- (optional; the result's error and the event's detail say 'aborted').
-- The job's options and checkpoint go with it (PREFIX..'opts', PREFIX..'ck', includes/drop_opts.lua).
-- A malformed record (written by a foreign client) is removed too, with its delayed-set entry.
-- Returns 1 when a job was removed, 0 when there was none. Retry-safe: a repeat returns 0.
-- Errors: 'SDERR WRONG_TYPE <key> <type>' (checked before any write).
-- Flags: allow-oom, as it frees memory: an operator can cancel jobs while Redis is full.
-- Events (docs/events.md): 'cancelled' (detail: the state it left: delayed, ready or running,
--  dead; 'aborted' for an abort of a job in its stream), when the queue keeps events.
-- Workflows (docs/workflows.md): a job cancelled before it ended tells its waiters it ended
--  cancelled ('c'; includes/flow.lua); a waiting job's parents record goes (includes/detach.lua)
--  after its links leave the children sets of the parents it waited for (includes/flow_unlink.lua:
--  flow_unlink, an outbox entry for a parent of another partition; docs/workflows.md#runs), and
--  so do a dead child's kept parents (PREFIX..'dd:'..id, flow_forget_dead).
-- @include keys
-- @include staging
-- @include detach
-- @include parse_record
-- @include server_time
-- @include keep_result
-- @include full_record
-- @include blob_keep
-- @include emit_event
-- @include write_many
-- @include drop_opts
-- @include build_record
-- @include new_record
-- @include wake_if_head
-- @include dead_result
-- @include flow_keep
-- @include flow
-- @include flow_partition
-- @include flow_unlink

local id = ARGV[1]
check_partition_keys()
local raw = redis.call('HGET', K_JOBS, id)
local r = parse_record(raw)
if not r then
  if not raw then return 0 end
  redis.call('ZREM', K_DELAYED, id)
  redis.call('HDEL', K_JOBS, id)
  drop_opts({id})
  return 1
end
if r.state == 'c' then return 0 end
if r.state == 's' then refuse_wrong_type(stream_key(r.topic), 'stream') end
if r.state == 'x' then refuse_wrong_type(dead_key(r.topic), 'stream') end
local keep = tonumber(ARGV[2]) or 0
local abort = ARGV[3] == '1' and r.state == 's'
if abort then refuse_wrong_type(PREFIX .. 'aborts', 'zset') end
if full_record(r) then keep = blob_keep(r.blob) or keep end -- before detach drops the entry
emit_event('cancelled', id, r.topic, r.attempts, abort and 'aborted' or ({d = 'delayed', s = 'ready or running', x = 'dead', r = 'ready'})[r.state])
if abort then
  local ABORT_KEEP_MS, now = 60000, server_time()
  local ak = PREFIX .. 'aborts'
  redis.call('ZREMRANGEBYSCORE', ak, '-inf', now - ABORT_KEEP_MS)
  redis.call('ZADD', ak, now, r.topic .. '|' .. r.entry)
  redis.call('PEXPIRE', ak, ABORT_KEEP_MS)
end
if r.state == 'w' then flow_unlink(id) end
detach(r, id)
redis.call('HDEL', K_JOBS, id)
drop_opts({id})
local now = server_time()
keep_result(id, 'c', now, keep, abort and 'aborted' or '')
if r.state ~= 'x' then flow_ended(id, 'c', now) else flow_forget_dead({id}) end
return 1
