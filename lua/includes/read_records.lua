-- read_records(ids, budget): the job records of ids, in order, read with HMGET in steps that
-- grow (1, 4, 16, 64, 256 ids) and stop once the records read pass budget bytes, so a batch of
-- large records never copies much more than the budget into the script. Returns the records
-- (false where none) and how many ids they cover (all of them, or a prefix).
-- @include keys
-- records_step(ids, s, step): the records of ids[s .. e] by one HMGET, e, and the step after
-- this one: the steps grow 1, 4, 16, 64, 256 ids (promoteDue reads its batch with it, a step at
-- a time as its loop reaches the records, under the same budget rule)
local function records_step(ids, s, step)
  local e = math.min(s + step - 1, #ids)
  return redis.call('HMGET', K_JOBS, unpack(ids, s, e)), e, math.min(step * 4, 256)
end
local function read_records(ids, budget)
  local raws, bytes, step, s = {}, 0, 1, 1
  while s <= #ids and bytes <= budget do
    local part, e
    part, e, step = records_step(ids, s, step)
    for j = 1, #part do
      raws[s + j - 1] = part[j]
      if part[j] then bytes = bytes + #part[j] end
    end
    s = e + 1
  end
  return raws, s - 1
end
