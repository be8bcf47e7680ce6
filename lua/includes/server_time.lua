-- server_time(): the Redis server clock from one TIME, as epoch milliseconds and epoch
-- microseconds (`local now = server_time()` keeps the first). Read once per script (TIME moves
-- on 7.0).
local function server_time()
  local t = redis.call('TIME')
  local s, us = tonumber(t[1]), tonumber(t[2])
  return s * 1000 + math.floor(us / 1000), s * 1000000 + us
end
