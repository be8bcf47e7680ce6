-- flow_partition(id, parts): the partition of job id among parts, as protocol/keys.py's
--  partition_of computes it (CRC-32 of its placement name: '{key}rest' -> key, 'name@digits'
--  -> name), as a string like MY_PARTITION (this partition when parts is nil).
-- flow_parts(): the queue's partition count, from field 'partitions' of PREFIX..'meta' (every
--  partition's meta has it; 1 when absent or unreadable).
-- flow_unlink(id): a waiting job id leaves before its parents told it (a cancel,
--  docs/workflows.md#runs): its link (its ref with its link token) leaves the children set of
--  each parent it still waits for: SREM here for a parent of this partition, an outbox entry
--  ('-' as outcome) for one of another partition, which forwardOutcomes applies there. Call it
--  before its deps hash goes (includes/detach.lua). A link of another run of the id (another
--  token) stays. Idempotent (SREM; a repeat finds no deps).
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

local function flow_parts()
  local v = redis.pcall('HGET', PREFIX .. 'meta', 'partitions')
  return type(v) == 'string' and tonumber(v) or 1
end

local function flow_unlink(id)
  local deps = redis.call('HGETALL', PREFIX .. 'deps:' .. id)
  local token, pending = nil, {}
  for i = 1, #deps, 2 do
    if deps[i] == '#' then token = deps[i + 1]
    elseif deps[i] ~= '~' and deps[i + 1] == 'w' then pending[#pending + 1] = deps[i] end
  end
  if #pending == 0 then return end
  local ref = flow_ref(id, token)
  local parts = flow_parts()
  for _, pid in ipairs(pending) do
    local p = flow_partition(pid, parts)
    if p == MY_PARTITION then
      redis.call('SREM', PREFIX .. 'children:' .. pid, ref)
    else
      redis.call('XADD', PREFIX .. 'outbox', '*', 'p', p, 'r', ref, 'f', pid, 'o', '-')
    end
  end
end
