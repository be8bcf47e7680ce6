-- dead_candidates(topic, count, only): {dead entry id, job id} pairs to act on: the one job
-- `only` when it is dead in this topic, else the oldest `count` dead-letter entries.
-- @include keys
-- @include parse_record
local function dead_candidates(topic, count, only)
  local candidates = {}
  if only ~= '' then
    local r = parse_record(redis.call('HGET', K_JOBS, only))
    if r and r.state == 'x' and r.topic == topic then candidates[1] = {r.entry, only} end
    return candidates
  end
  for _, e in ipairs(redis.call('XRANGE', dead_key(topic), '-', '+', 'COUNT', count)) do
    local f, id = e[2], nil
    for i = 1, #f, 2 do if f[i] == 'id' then id = f[i + 1] end end
    candidates[#candidates + 1] = {e[1], id}
  end
  return candidates
end
