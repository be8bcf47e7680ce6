-- wake_if_head(id, due): when job id is now the earliest delayed job, set the wake marker so a
-- dispatcher blocked in BZPOPMIN re-reads its sleep at once.
-- @include keys
local function wake_if_head(id, due)
  local head = redis.call('ZRANGE', K_DELAYED, 0, 0)
  if head[1] == id then redis.call('ZADD', K_WAKE, due, 'w') end
end
