-- now_ms(): the Redis server clock in epoch milliseconds. Read once per script (TIME moves on 7.0).
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
