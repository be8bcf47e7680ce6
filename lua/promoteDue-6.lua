-- promoteDue-6: move due jobs, earliest first, from the delayed set into their topic streams.
-- KEYS: the six partition keys (includes/keys.lua); writes PREFIX..'t:'..topic (derived, same tag).
-- ARGV[1] batch limit (bounded so one call stays around a millisecond)
-- Returns {moved, next_due_ms or -1, now_ms, dropped}: next_due is the new head of the delayed set,
-- so the caller sleeps (next_due - now) by its own monotonic clock. dropped lists
-- {id, reason} pairs of due ids that were not promoted: no record, a malformed record (left in
-- the jobs hash for get/cancel), or a topic key that is not a stream (the job goes dead instead).
-- Stream entry fields: 'id' job id, 'rec' the job record as it was when delayed.
-- Retry-safe: a job moves once; a repeated call finds it gone from the delayed set.
-- @include now_ms
-- @include keys
-- @include record

local now = now_ms()
local limit = tonumber(ARGV[1])
local ids = redis.call('ZRANGEBYSCORE', K_DELAYED, '-inf', now, 'LIMIT', 0, limit)
local moved = 0
local per_topic = {}
local dropped = {}
for _, id in ipairs(ids) do
  local raw = redis.call('HGET', K_JOBS, id)
  local r = parse_record(raw)
  if r and r.state == 'd' then
    -- pcall: a foreign client may have put another type of value at the topic's key; that job
    -- goes dead with the reason instead of aborting the batch for every other job
    local entry = redis.pcall('XADD', stream_key(r.topic), '*', 'id', id, 'rec', raw)
    if type(entry) == 'table' then
      local why = 'topic key ' .. stream_key(r.topic) .. ' is not a stream: ' .. tostring(entry.err)
      entry = redis.pcall('XADD', dead_key(r.topic), '*', 'id', id, 'error', why,
                          'attempts', r.attempts, 'at', now)
      if type(entry) == 'string' then r.state = 'x' end
      dropped[#dropped + 1] = {id, why}
    else
      r.state = 's'
      moved = moved + 1
    end
    if type(entry) == 'string' then
      r.entry = entry
      redis.call('HSET', K_JOBS, id, build_record(r))
    end
    per_topic[r.topic] = (per_topic[r.topic] or 0) + 1
  elseif not raw then
    dropped[#dropped + 1] = {id, 'no job record'}
  elseif not r then
    dropped[#dropped + 1] = {id, 'malformed job record'}
  end
end
if #ids > 0 then redis.call('ZREM', K_DELAYED, unpack(ids)) end
for topic, count in pairs(per_topic) do redis.call('HINCRBY', K_COUNTS, topic, -count) end
local head = redis.call('ZRANGE', K_DELAYED, 0, 0, 'WITHSCORES')
local next_due = -1
if head[2] then next_due = tonumber(head[2]) end
return {moved, next_due, now, dropped}
