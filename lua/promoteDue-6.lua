-- promoteDue-6: move due jobs, earliest first, from the delayed set into their topic streams.
-- KEYS: the six partition keys (includes/keys.lua); writes PREFIX..'t:'..topic (derived, same tag).
-- ARGV[1] batch limit (bounded so one call stays around a millisecond)
-- Returns {moved, next_due_ms or -1, now_ms, dropped, now_us}: next_due is the new head of the
-- delayed set and now_us the same server clock reading as now_ms in epoch microseconds, so the
-- caller sleeps (next_due * 1000 - now_us) µs by its own monotonic clock. dropped lists
-- {id, reason} pairs of due ids that were not promoted: no record, a malformed record (left in
-- the jobs hash for get/cancel), or a topic key that is not a stream (the job goes dead instead).
-- Stream entry fields: 'id' job id, 'rec' the job record as it was when delayed.
-- Retry-safe: a job moves once; a repeated call finds it gone from the delayed set.
-- @include server_time
-- @include keys
-- @include record
-- @include hmget_many
-- @include write_many

local now, now_us = server_time()
local limit = tonumber(ARGV[1])
local ids = redis.call('ZRANGEBYSCORE', K_DELAYED, '-inf', now, 'LIMIT', 0, limit)
local n = #ids
local moved = 0
local dropped = {}
if n > 0 then
  local raws = hmget_many(K_JOBS, ids)
  local writes = {} -- id, new record pairs: one HSET for the batch
  local per_topic = {}
  local streams = {}
  for i = 1, n do
    local id, raw = ids[i], raws[i]
    -- the same shape parse_record accepts; positions instead of copies, as only the state and
    -- the entry change: the rest of the record is kept byte for byte
    local state, entry_at, entry_end, topic
    if raw then
      state, entry_at, entry_end, topic = string.match(raw,
        '^([dsxc])|%d+|%d+|%d+|%d+|%d+|()[%d%-]*()|([^|]+)|')
    end
    if state == 'd' then
      local sk = streams[topic]
      if not sk then sk = stream_key(topic); streams[topic] = sk end
      -- pcall: a foreign client may have put another type of value at the topic's key; that job
      -- goes dead with the reason instead of aborting the batch for every other job
      local entry = redis.pcall('XADD', sk, '*', 'id', id, 'rec', raw)
      if type(entry) == 'string' then
        writes[#writes + 1] = id
        writes[#writes + 1] = 's' .. string.sub(raw, 2, entry_at - 1) .. entry
                              .. string.sub(raw, entry_end)
        moved = moved + 1
      else
        local r = parse_record(raw)
        local why = 'topic key ' .. sk .. ' is not a stream: ' .. tostring(entry.err)
        entry = redis.pcall('XADD', dead_key(topic), '*', 'id', id, 'error', why,
                            'attempts', r.attempts, 'at', now)
        if type(entry) == 'string' then
          r.state, r.entry = 'x', entry
          writes[#writes + 1] = id
          writes[#writes + 1] = build_record(r)
        end
        dropped[#dropped + 1] = {id, why}
      end
      per_topic[topic] = (per_topic[topic] or 0) + 1
    elseif not raw then
      dropped[#dropped + 1] = {id, 'no job record'}
    elseif not state then
      dropped[#dropped + 1] = {id, 'malformed job record'}
    end
  end
  if #writes > 0 then write_many('HSET', K_JOBS, writes) end
  -- ids are ranks 0..n-1 of the delayed set (read from -inf in order) and nothing above wrote
  -- to it, so this removes exactly them, without sending them back
  redis.call('ZREMRANGEBYRANK', K_DELAYED, 0, n - 1)
  for topic, count in pairs(per_topic) do redis.call('HINCRBY', K_COUNTS, topic, -count) end
end
local head = redis.call('ZRANGE', K_DELAYED, 0, 0, 'WITHSCORES')
local next_due = -1
if head[2] then next_due = math.ceil(tonumber(head[2])) end -- the first ms it is due in
return {moved, next_due, now, dropped, now_us}
