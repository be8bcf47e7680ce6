-- write_many(cmd, key, flat): one variadic write (HSET field value ..., ZADD score member ...)
-- for a whole batch instead of one call per item; sent in pieces of WRITE_STEP values (even, so
-- a pair is never split), as unpack() of a very long list overflows the Lua stack.
local WRITE_STEP = 1000
local function write_many(cmd, key, flat)
  for s = 1, #flat, WRITE_STEP do
    redis.call(cmd, key, unpack(flat, s, math.min(s + WRITE_STEP - 1, #flat)))
  end
end
