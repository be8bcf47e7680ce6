-- hmget_many(key, fields): HMGET of a whole batch in one command instead of one HGET per field
-- (each redis.call has a fixed cost); sent in pieces of HMGET_STEP fields, as unpack() of a very
-- long list overflows the Lua stack. Missing fields are false, as with HGET.
local HMGET_STEP = 1000
local function hmget_many(key, fields)
  if #fields <= HMGET_STEP then return redis.call('HMGET', key, unpack(fields)) end
  local out = {}
  for s = 1, #fields, HMGET_STEP do
    local part = redis.call('HMGET', key, unpack(fields, s, math.min(s + HMGET_STEP - 1, #fields)))
    for j = 1, #part do out[#out + 1] = part[j] end
  end
  return out
end
