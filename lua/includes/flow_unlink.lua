-- flow_unlink(id): a waiting job id leaves before its parents told it (a cancel,
--  docs/workflows.md#runs): its link (its ref with its link token) leaves the children set of
--  each parent it still waits for: SREM here for a parent of this partition, an outbox entry
--  ('-' as outcome) for one of another partition, which forwardOutcomes applies there. The
--  partition count is field 'partitions' of PREFIX..'meta' (every partition's meta has it).
--  Call it before its deps hash goes (includes/detach.lua). A link of another life of the id
--  (another token) stays. Idempotent (SREM; a repeat finds no deps).
-- @include keys
-- @include flow
-- @include flow_partition
local function flow_unlink(id)
  local deps = redis.call('HGETALL', PREFIX .. 'deps:' .. id)
  local token, pending = nil, {}
  for i = 1, #deps, 2 do
    if deps[i] == '#' then token = deps[i + 1]
    elseif deps[i] ~= '~' and deps[i + 1] == 'w' then pending[#pending + 1] = deps[i] end
  end
  if #pending == 0 then return end
  local ref = flow_ref(id, token)
  local parts = redis.pcall('HGET', PREFIX .. 'meta', 'partitions')
  parts = type(parts) == 'string' and tonumber(parts) or 1
  for _, pid in ipairs(pending) do
    local p = flow_partition(pid, parts)
    if p == MY_PARTITION then
      redis.call('SREM', PREFIX .. 'children:' .. pid, ref)
    else
      redis.call('XADD', PREFIX .. 'outbox', '*', 'p', p, 'r', ref, 'f', pid, 'o', '-')
    end
  end
end
