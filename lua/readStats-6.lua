#!lua flags=no-writes
-- readStats-6: per-topic counts of one partition (read only).
-- KEYS: the six partition keys (includes/keys.lua); reads every topic's streams.
-- ARGV: none
-- Flags: no-writes (runs while Redis is full, and on a replica).
-- Returns {now_ms, head_due_ms or -1, head_topic or '', rows...}; one row per topic known to the
-- counts hash: {topic, delayed, in_stream, reserved, dead, oldest_undelivered_due_ms or -1, group}.
-- @include server_time
-- @include keys
-- @include parse_record

local now = server_time()
local out = {now, -1, ''}
local head = redis.call('ZRANGE', K_DELAYED, 0, 0, 'WITHSCORES')
if head[1] then
  out[2] = tonumber(head[2])
  local hr = parse_record(redis.call('HGET', K_JOBS, head[1]))
  if hr then out[3] = hr.topic end
end
local counts = redis.call('HGETALL', K_COUNTS)
for i = 1, #counts, 2 do
  local topic, delayed = counts[i], tonumber(counts[i + 1])
  local sk = stream_key(topic)
  local ok_len, in_stream = pcall(redis.call, 'XLEN', sk)  -- not a stream (foreign key): 0
  if not ok_len then in_stream = 0 end
  local reserved, oldest = 0, -1
  local group = redis.call('HGET', K_GROUPS, topic) or ''
  local after = '-'
  if group ~= '' and in_stream > 0 then
    local ok, summary = pcall(redis.call, 'XPENDING', sk, group)
    if ok then reserved = summary[1] end
    local ok2, infos = pcall(redis.call, 'XINFO', 'GROUPS', sk)
    if ok2 then
      for _, g in ipairs(infos) do
        local name, last = nil, nil
        for j = 1, #g, 2 do
          if g[j] == 'name' then name = g[j + 1] end
          if g[j] == 'last-delivered-id' then last = g[j + 1] end
        end
        if name == group and last then after = '(' .. last end
      end
    end
  end
  if in_stream > 0 then
    local e = redis.call('XRANGE', sk, after, '+', 'COUNT', 1)
    if e[1] then
      local f = e[1][2]
      for j = 1, #f, 2 do
        if f[j] == 'rec' then
          local r = parse_record(f[j + 1])
          if r then oldest = r.due end
        end
      end
    end
  end
  local ok_dead, dead = pcall(redis.call, 'XLEN', dead_key(topic))
  if not ok_dead then dead = 0 end
  out[#out + 1] = {topic, delayed, in_stream, reserved, dead, oldest, group}
end
return out
