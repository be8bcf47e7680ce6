-- purge_done(now, limit): forget at most limit expired tombstones (keep_done), oldest first, in
-- three commands. A caller that creates tombstones passes at least as many as it creates, so
-- expiry keeps up with any rate; promoteDue sweeps the rest (docs/keys.md).
local function purge_done(now, limit)
  local old = redis.call('ZRANGEBYSCORE', K_DONE, '-inf', now, 'LIMIT', 0, limit)
  if #old == 0 then return 0 end
  local raws = hmget_many(K_JOBS, old)
  local gone = {}
  for i = 1, #old do
    if raws[i] and string.sub(raws[i], 1, 1) == 'c' then gone[#gone + 1] = old[i] end
  end
  if #gone > 0 then write_many('HDEL', K_JOBS, gone) end
  write_many('ZREM', K_DONE, old)
  return #old
end
