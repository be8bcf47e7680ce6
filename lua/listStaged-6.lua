#!lua flags=no-writes
-- listStaged-6: one bounded page of the jobs waiting in the lanes of staged topics (state 'r',
-- ready: docs/priorities.md) of one partition (read only); the ready listing's second part,
-- after the ready jobs of the streams (listJobs).
-- KEYS: the six partition keys (includes/keys.lua); reads PREFIX..'staged', the topics'
-- 'lanes:' and 'parked:' sets (a lane is non-empty exactly when its key is in one of them,
-- includes/staging.lua) and the lanes 'rq:'..topic..'|'..key.
-- ARGV[1] topic, or '' for every staged topic of the partition
-- ARGV[2] rows: at most this many rows
-- ARGV[3] bytes: stop reading records past this many bytes
-- ARGV[4] cursor lane '<topic>|<key>', '' for the start; ARGV[5] cursor rank; ARGV[6] cursor
--         job id: the walk goes on after (lane, rank, id)
-- Order: lanes by '<topic>|<key>' (bytes), within a lane by (rank, job id) as the lane sorts.
-- Flags: no-writes (runs while Redis is full, and on a replica).
-- Returns {now_ms, reached, rows...}. reached: {} when the partition has nothing beyond the
-- rows, else the last position examined {lane, rank, id} (rank 'inf', id '': after the whole
-- lane). A row: {lane, rank, job id, record,
-- 'ready', '', 0, 0, ''} (listJobs's shape). Members whose record is gone or not 'r' of that
-- topic are skipped. Work per call: the rows and bytes above (at most rows lanes walked), plus
-- one pass over the key names of each staged topic (its lanes and parked sets) that picks the
-- lanes after the cursor.
-- @include server_time
-- @include keys
-- @include parse_record
-- @include read_records

local now = server_time()
local only, rows_max, budget = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local clane, crank, cid = ARGV[4], ARGV[5], ARGV[6]
local out = {now, {}}

local function lt(a, b) -- a < b comparing bytes (Lua's < follows the server's locale)
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

-- the first rows_max lanes at or after the cursor's, in byte order (a lane gives one row at
-- least): one pass over the key names, a sorted list of at most rows_max kept on the way
local topics = {}
if only ~= '' then topics = {only} else topics = redis.call('HKEYS', K_STAGED) end
local lanes, seen, more = {}, {}, false
local whole = crank == 'inf' -- the cursor's lane was walked to its end
for _, topic in ipairs(topics) do
  for _, set in ipairs({PREFIX .. 'lanes:' .. topic, PREFIX .. 'parked:' .. topic}) do
    if redis.call('TYPE', set).ok == 'zset' then
      for _, key in ipairs(redis.call('ZRANGE', set, 0, -1)) do
        local lane = topic .. '|' .. key
        local after = clane == '' or lt(clane, lane) or (lane == clane and not whole)
        if after and not seen[lane] then
          seen[lane] = true
          if #lanes < rows_max or lt(lane, lanes[#lanes][1]) then
            local lo, hi = 1, #lanes + 1 -- the first place whose lane sorts after this one
            while lo < hi do
              local mid = math.floor((lo + hi) / 2)
              if lt(lane, lanes[mid][1]) then hi = mid else lo = mid + 1 end
            end
            table.insert(lanes, lo, {lane, topic})
            if #lanes > rows_max then table.remove(lanes); more = true end
          else
            more = true
          end
        end
      end
    end
  end
end

local bytes, last = 0, nil -- last: the last position examined {lane, rank, id}
for _, l in ipairs(lanes) do
  local lane, topic = l[1], l[2]
  local key = PREFIX .. 'rq:' .. lane
  if redis.call('TYPE', key).ok == 'zset' then
    local start = 0
    if lane == clane then -- first rank after (rank, id): members of one score sort by bytes
      local lo = redis.call('ZCOUNT', key, '-inf', '(' .. crank)
      local hi = lo + redis.call('ZCOUNT', key, crank, crank)
      while lo < hi do
        local mid = math.floor((lo + hi) / 2)
        local m = redis.call('ZRANGE', key, mid, mid)[1]
        if lt(cid, m) then hi = mid else lo = mid + 1 end
      end
      start = lo
    end
    local flat = redis.call('ZRANGE', key, start, start + rows_max - (#out - 2) - 1, 'WITHSCORES')
    local ids, ranks = {}, {}
    for i = 1, #flat, 2 do ids[#ids + 1] = flat[i]; ranks[#ranks + 1] = flat[i + 1] end
    if #ids > 0 and bytes > budget then -- the bytes ran out before this lane
      if last then out[2] = last end
      return out
    end
    local raws, covered = read_records(ids, budget - bytes)
    for i = 1, covered do
      local r = parse_record(raws[i])
      if raws[i] then bytes = bytes + #raws[i] end
      last = {lane, ranks[i], ids[i]}
      if r and r.state == 'r' and r.topic == topic then
        out[#out + 1] = {lane, ranks[i], ids[i], raws[i], 'ready', '', 0, 0, ''}
      end
    end
    if covered < #ids or #out - 2 >= rows_max
        or redis.call('ZCARD', key) > start + #ids then -- stopped inside this lane
      if last then out[2] = last end
      return out
    end
  end
end
-- every chosen lane was walked to its end and more lanes come after: go on after the last one
if more then out[2] = {lanes[#lanes][1], 'inf', ''} end
return out
