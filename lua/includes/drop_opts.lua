-- drop_opts(ids): forget the options of jobs that ended for good (ack, cancel, purge of their dead
-- letter; docs/keys.md#job-options): one HDEL of every id, after one EXISTS of K_OPTS, so a
-- partition that never had options pays that EXISTS only. Their checkpoints go too (PREFIX..'ck',
-- hash job id -> JSON, docs/keys.md#checkpoints; one TYPE when the partition has none, and a
-- foreign value there is left alone).
-- @include keys
-- @include write_many
local function drop_opts(ids)
  if #ids > 0 and redis.call('EXISTS', K_OPTS) == 1 then write_many('HDEL', K_OPTS, ids) end
  if #ids > 0 and redis.call('TYPE', PREFIX .. 'ck').ok == 'hash' then write_many('HDEL', PREFIX .. 'ck', ids) end
end
