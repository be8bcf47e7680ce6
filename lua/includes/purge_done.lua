-- purge_done(now, limit): forget at most limit expired tombstones (keep_done), oldest first; the
-- records are read with read_records (include it first) and the call stops once they pass 1 MiB. A caller that
-- creates tombstones passes at least as many as it creates, so expiry keeps up with any rate;
-- promoteDue sweeps the rest (docs/keys.md). Returns true when expired tombstones may be left.
-- @include keys
-- @include write_many
-- @include read_records
local PURGE_BYTES = 1048576
local function purge_done(now, limit)
  local old = redis.call('ZRANGEBYSCORE', K_DONE, '-inf', now, 'LIMIT', 0, limit)
  if #old == 0 then return false end
  local raws, covered = read_records(old, PURGE_BYTES)
  local seen, gone = {}, {}
  for i = 1, covered do
    seen[i] = old[i]
    if raws[i] and string.sub(raws[i], 1, 1) == 'c' then gone[#gone + 1] = old[i] end
  end
  if #gone > 0 then write_many('HDEL', K_JOBS, gone) end
  write_many('ZREM', K_DONE, seen)
  return #seen >= limit or #seen < #old
end
