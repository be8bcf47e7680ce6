-- purge_done(now, limit): forget at most limit expired tombstones (keep_done), oldest first; the
-- records are read in steps of 100 and the call stops once they pass 1 MiB. A caller that
-- creates tombstones passes at least as many as it creates, so expiry keeps up with any rate;
-- promoteDue sweeps the rest (docs/keys.md). Returns true when expired tombstones may be left.
-- @include keys
-- @include write_many
local PURGE_STEP, PURGE_BYTES = 100, 1048576
local function purge_done(now, limit)
  local old = redis.call('ZRANGEBYSCORE', K_DONE, '-inf', now, 'LIMIT', 0, limit)
  if #old == 0 then return false end
  local seen, gone, bytes = {}, {}, 0
  for s = 1, #old, PURGE_STEP do
    local part = {unpack(old, s, math.min(s + PURGE_STEP - 1, #old))}
    local raws = redis.call('HMGET', K_JOBS, unpack(part))
    for i = 1, #part do
      seen[#seen + 1] = part[i]
      if raws[i] then
        bytes = bytes + #raws[i]
        if string.sub(raws[i], 1, 1) == 'c' then gone[#gone + 1] = part[i] end
      end
    end
    if bytes > PURGE_BYTES then break end
  end
  if #gone > 0 then write_many('HDEL', K_JOBS, gone) end
  write_many('ZREM', K_DONE, seen)
  return #seen >= limit or #seen < #old
end
