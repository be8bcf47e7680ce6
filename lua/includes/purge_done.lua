-- purge_done(now): forget at most 20 expired tombstones (keep_done), so the work stays bounded.
-- @include keys
local function purge_done(now)
  local old = redis.call('ZRANGEBYSCORE', K_DONE, '-inf', now, 'LIMIT', 0, 20)
  for _, id in ipairs(old) do
    local raw = redis.call('HGET', K_JOBS, id)
    if raw and string.sub(raw, 1, 1) == 'c' then redis.call('HDEL', K_JOBS, id) end
    redis.call('ZREM', K_DONE, id)
  end
end
