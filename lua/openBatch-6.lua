#!lua
-- openBatch-6: open a batch or add members to an open one, and close it (docs/workflows.md#batches).
-- KEYS: the six partition keys of the batch's partition (the one of '<batch>@1': its callbacks
-- '<batch>@1' on success and '<batch>@2' on completion live there too).
-- ARGV[1] batch id, ARGV[2] '1' close after adding, ARGV[3] outcome keep ms, ARGV[4] '1' when
-- callbacks are given, ARGV[5] on-success callback, ARGV[6] on-complete callback (each
-- 'kind|when_ms|ttr_ms|max_attempts|topic|blob', after 'o<priority>|<expires_ms>|<key>|' for a
-- callback with job options (includes/flow.lua: flow_callback), or ''), then member ids.
-- Returns {total, ok, bad, closed, fired, created_ms}. Members are noted as waited for before
-- they are written (by enqueueFlow, with the ref '<partition>|#<batch>'); a member noted twice
-- counts once. When the batch is closed and every member has ended, its callbacks are written
-- once (includes/flow.lua: batch_fire).
-- Errors: 'SDERR BATCH_CLOSED <id>' (members or a close on a closed batch with new members),
-- 'SDERR BATCH_CALLBACKS <id>' (callbacks for a batch that exists), 'SDERR WRONG_TYPE'.
-- Retry-safe: the same call again adds nothing (callbacks refused only when they differ).
-- @include server_time
-- @include keys
-- @include parse_record
-- @include build_record
-- @include new_record
-- @include wake_if_head
-- @include emit_event
-- @include blob_keep
-- @include keep_result
-- @include dead_result
-- @include flow_keep
-- @include flow

local now = server_time()
local b, close, keep = ARGV[1], ARGV[2] == '1', tonumber(ARGV[3])
local bk, mk = PREFIX .. 'batch:' .. b, PREFIX .. 'bm:' .. b
check_partition_keys()
refuse_wrong_type(bk, 'hash'); refuse_wrong_type(mk, 'hash')
local f = redis.call('HMGET', bk, 'closed', 'cb1', 'cb2', 'created')
if f[4] then
  if ARGV[4] == '1' and (f[2] ~= ARGV[5] or f[3] ~= ARGV[6]) then
    return redis.error_reply('SDERR BATCH_CALLBACKS ' .. b)
  end
  if f[1] == '1' then
    for i = 7, #ARGV do
      if not redis.call('HGET', mk, ARGV[i]) then return redis.error_reply('SDERR BATCH_CLOSED ' .. b) end
    end
  end
else
  redis.call('HSET', bk, 'total', 0, 'ok', 0, 'bad', 0, 'closed', 0, 'fired', 0,
             'created', now, 'cb1', ARGV[5], 'cb2', ARGV[6])
end
redis.call('HSETNX', PREFIX .. 'meta', 'flow', keep)
local added = 0
for i = 7, #ARGV do added = added + redis.call('HSETNX', mk, ARGV[i], 'w') end
if added > 0 then redis.call('HINCRBY', bk, 'total', added) end
if close then redis.call('HSET', bk, 'closed', 1) end
batch_fire(b, now)
local g = redis.call('HMGET', bk, 'total', 'ok', 'bad', 'closed', 'fired', 'created')
for i = 1, 6 do g[i] = tonumber(g[i]) or 0 end
return g
