-- blob_keep(blob): the job's keep_result ms, the 8th element of the producer's blob (a
-- MessagePack array, docs/keys.md#the-blob-envelope), or nil when it has none. Redis's cmsgpack
-- does not read MessagePack bin values, so the elements before it are skipped here by their
-- lengths (O(1) per element but for a header map or a schedule array, both bounded).
local function mp_skip(s, pos)
  local b = string.byte(s, pos)
  if not b then return nil end
  local function be(n)
    local v = 0
    for i = 1, n do v = v * 256 + (string.byte(s, pos + i) or 0) end
    return v
  end
  local function items(p, count)
    for _ = 1, count do
      p = mp_skip(s, p)
      if not p then return nil end
    end
    return p
  end
  if b <= 0x7f then return pos + 1, b end -- positive fixint
  if b >= 0xe0 then return pos + 1 end -- negative fixint
  if b >= 0xa0 and b <= 0xbf then return pos + 1 + b - 0xa0 end -- fixstr
  if b >= 0x80 and b <= 0x8f then return items(pos + 1, 2 * (b - 0x80)) end -- fixmap
  if b >= 0x90 and b <= 0x9f then return items(pos + 1, b - 0x90) end -- fixarray
  if b == 0xc0 or b == 0xc2 or b == 0xc3 then return pos + 1 end -- nil, false, true
  if b == 0xc4 or b == 0xd9 then return pos + 2 + be(1) end -- bin 8, str 8
  if b == 0xc5 or b == 0xda then return pos + 3 + be(2) end -- bin 16, str 16
  if b == 0xc6 or b == 0xdb then return pos + 5 + be(4) end -- bin 32, str 32
  if b == 0xca then return pos + 5 end -- float 32
  if b == 0xcb then return pos + 9 end -- float 64
  if b == 0xcc then return pos + 2, be(1) end -- uint 8
  if b == 0xcd then return pos + 3, be(2) end -- uint 16
  if b == 0xce then return pos + 5, be(4) end -- uint 32
  if b == 0xcf then return pos + 9, be(8) end -- uint 64
  if b == 0xd0 then return pos + 2 end -- int 8 (a keep time is never negative)
  if b == 0xd1 then return pos + 3 end
  if b == 0xd2 then return pos + 5 end
  if b == 0xd3 then return pos + 9 end
  if b == 0xdc then return items(pos + 3, be(2)) end -- array 16
  if b == 0xde then return items(pos + 3, 2 * be(2)) end -- map 16
  return nil
end
local function blob_keep(blob)
  local b = string.byte(blob, 1)
  if not b or b < 0x98 or b > 0x9f then return nil end -- a fixarray of 8 elements or more
  local p = 2
  for _ = 1, 7 do
    p = mp_skip(blob, p)
    if not p then return nil end
  end
  local _, keep = mp_skip(blob, p)
  return keep
end
