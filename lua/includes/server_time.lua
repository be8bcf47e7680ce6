-- server_time(): the Redis server clock from one TIME, as epoch milliseconds and epoch
-- microseconds (`local now = server_time()` keeps the first). Read once per script (TIME moves
-- on 7.0).
-- due_after(now_us, delay_ms): the due time (epoch ms) of a delay counted from now_us, rounded
-- up to the next whole ms, so a job is never due before its full delay has passed.
local function server_time()
  local t = redis.call('TIME')
  local s, us = tonumber(t[1]), tonumber(t[2])
  return s * 1000 + math.floor(us / 1000), s * 1000000 + us
end
local function due_after(now_us, delay_ms)
  return math.floor((now_us + delay_ms * 1000 + 999) / 1000)
end
