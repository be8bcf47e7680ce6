-- drop_opts(ids): forget the options of jobs that ended for good (ack, cancel, purge of their dead
-- letter; docs/keys.md#job-options): one HDEL of every id. Their checkpoints go too
-- (PREFIX..'ck', hash job id -> JSON, docs/keys.md#checkpoints). A foreign value at either key
-- is left alone: this runs after the caller's writes, so it must not fail the call half-written.
-- A partition that never had options nor checkpoints pays one EXISTS of both keys.
-- @include keys
-- @include write_many
local function drop_opts(ids)
  -- a partition with neither key (no options, no checkpoints) pays one EXISTS of both
  if #ids == 0 or redis.call('EXISTS', K_OPTS, PREFIX .. 'ck') == 0 then return end
  if redis.call('TYPE', K_OPTS).ok == 'hash' then write_many('HDEL', K_OPTS, ids) end
  if redis.call('TYPE', PREFIX .. 'ck').ok == 'hash' then write_many('HDEL', PREFIX .. 'ck', ids) end
end
