-- flow_partition(id, parts): the partition of job id among parts, as protocol/keys.py's
--  partition_of computes it (CRC-32 of its placement name: '{key}rest' -> key, 'name@digits'
--  -> name), as a string like MY_PARTITION (this partition when parts is nil).
-- @include keys
-- @include flow
local CRC_TABLE = nil
local function crc32(s)
  if not CRC_TABLE then
    CRC_TABLE = {}
    for i = 0, 255 do
      local c = i
      for _ = 1, 8 do
        if bit.band(c, 1) == 1 then c = bit.bxor(bit.rshift(c, 1), 0xEDB88320)
        else c = bit.rshift(c, 1) end
      end
      CRC_TABLE[i] = c
    end
  end
  local c = bit.bnot(0)
  for i = 1, #s do
    c = bit.bxor(bit.rshift(c, 8), CRC_TABLE[bit.band(bit.bxor(c, string.byte(s, i)), 255)])
  end
  c = bit.bnot(c)
  if c < 0 then c = c + 4294967296 end
  return c
end

local function flow_partition(id, parts)
  if not parts then return MY_PARTITION end -- a caller that gives no count: all looked up here
  if parts <= 1 then return '0' end
  local name = id
  local close = string.sub(id, 1, 1) == '{' and string.find(id, '}', 3, true)
  if close then name = string.sub(id, 2, close - 1)
  else name = string.match(id, '^(.+)@%d+$') or id end
  return tostring(crc32(name) % parts)
end
