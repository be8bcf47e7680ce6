-- read_records(ids, budget): the job records of ids, in order, read with HMGET in steps that
-- grow (1, 4, 16, 64, 256 ids) and stop once the records read pass budget bytes, so a batch of
-- large records never copies much more than the budget into the script. Returns the records
-- (false where none) and how many ids they cover (all of them, or a prefix).
-- @include keys
local function read_records(ids, budget)
  local raws, bytes, step, s = {}, 0, 1, 1
  while s <= #ids and bytes <= budget do
    local e = math.min(s + step - 1, #ids)
    local part = redis.call('HMGET', K_JOBS, unpack(ids, s, e))
    for j = 1, #part do
      raws[s + j - 1] = part[j]
      if part[j] then bytes = bytes + #part[j] end
    end
    s = e + 1
    step = math.min(step * 4, 256)
  end
  return raws, s - 1
end
