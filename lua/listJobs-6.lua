#!lua flags=no-writes
-- listJobs-6: one bounded page of the jobs of one partition in one state (read only).
-- KEYS: the six partition keys (includes/keys.lua); reads the topic and dead-letter streams.
-- ARGV[1] state: 'delayed', 'ready', 'reserved', 'dead' or 'waiting' (for its parents,
--         docs/workflows.md: the sorted set PREFIX..'wjobs', read as the delayed set is, by
--         created ms instead of due ms)
-- ARGV[2] topic, or '' for every topic the counts hash knows
-- ARGV[3] rows: at most this many rows (delayed); entries read per topic (the streams)
-- ARGV[4] scan: delayed only, at most this many members of the delayed set examined
-- ARGV[5] bytes: stop reading records past this many bytes (per topic for the streams)
-- ARGV[6] cursor position, '' for the start: delayed: due ms; streams: entry id 'ms-seq'
-- ARGV[7] cursor tie: delayed: job id (members of score ARGV[6] up to it are skipped);
--         streams: topic; ARGV[8] '1' or '0': an entry at exactly the cursor id is skipped
--         when its topic sorts before ARGV[7], or equals it and ARGV[8] is '1'
-- Flags: no-writes (runs while Redis is full, and on a replica).
-- Returns {now_ms, reached, rows...}. reached: {} when the partition has nothing beyond the
-- rows, else the last position examined ({due, id} or {entry id, topic}); rows past it may be
-- missing from this reply. A row: {pos1, pos2, job id, record, substate, owner, idle_ms,
-- deliveries, error}, pos1/pos2 as in reached. Entries whose record is gone, does not parse or
-- points elsewhere (stale) are skipped. Order: bytes, never the locale (lt below).
-- Layout 2: a header-only record (docs/keys.md#layouts) is given whole, its blob taken from the
-- stream entry read for the row (full_record).
-- @include server_time
-- @include keys
-- @include parse_record
-- @include read_records
-- @include full_record

local now = server_time()
local state, only, rows_max = ARGV[1], ARGV[2], tonumber(ARGV[3])
local scan, budget, cpos, ctie, cskip = tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6], ARGV[7], ARGV[8]
local out = {now, {}}

-- a < b comparing bytes (Lua's < follows the server's collation locale)
local function lt(a, b)
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

if state == 'delayed' or state == 'waiting' then -- a sorted set: by (due or created ms, id)
  local zk = state == 'waiting' and PREFIX .. 'wjobs' or K_DELAYED
  local want = state == 'waiting' and 'w' or 'd'
  local start = 0
  if cpos ~= '' then  -- first rank after (due, id): members of one score sort by bytes
    local lo = redis.call('ZCOUNT', zk, '-inf', '(' .. cpos)
    local hi = lo + redis.call('ZCOUNT', zk, cpos, cpos)
    while lo < hi do
      local mid = math.floor((lo + hi) / 2)
      local m = redis.call('ZRANGE', zk, mid, mid)[1]
      if lt(ctie, m) then hi = mid else lo = mid + 1 end
    end
    start = lo
  end
  local flat = redis.call('ZRANGE', zk, start, start + scan - 1, 'WITHSCORES')
  local ids, dues = {}, {}
  for i = 1, #flat, 2 do ids[#ids + 1] = flat[i]; dues[#dues + 1] = flat[i + 1] end
  local raws, covered = read_records(ids, budget)
  local last = 0
  for i = 1, covered do
    last = i
    local r = parse_record(raws[i])
    if r and r.state == want and (only == '' or r.topic == only) then
      out[#out + 1] = {dues[i], ids[i], ids[i], raws[i], '', '', 0, 0, ''}
      if #out - 2 >= rows_max then break end
    end
  end
  if last > 0 and (last < #ids or #ids >= scan or #out - 2 >= rows_max) then
    out[2] = {dues[last], ids[last]}
  end
  return out
end

local function parse_id(eid)
  local ms, seq = string.match(eid, '^(%d+)-(%d+)$')
  return tonumber(ms), tonumber(seq)
end
local function id_lt(a, b)
  local am, as = parse_id(a)
  local bm, bs = parse_id(b)
  return am < bm or (am == bm and as < bs)
end
local function after(eid)  -- the smallest entry id above eid
  local ms, seq = parse_id(eid)
  return string.format('%d-%d', ms, seq + 1)
end
local function is_stream(key)
  local t = redis.call('TYPE', key).ok
  return t == 'stream'
end

local topics = {}
if only ~= '' then topics = {only} else topics = redis.call('HKEYS', K_COUNTS) end
local reached = nil
for _, topic in ipairs(topics) do
  local key = state == 'dead' and dead_key(topic) or stream_key(topic)
  local group = redis.call('HGET', K_GROUPS, topic)
  if is_stream(key) and (state ~= 'reserved' or group) then
    local from = '-'
    if cpos ~= '' then
      local skip = lt(topic, ctie) or (topic == ctie and cskip == '1')
      from = skip and after(cpos) or cpos
    end
    local entries = {}  -- {entry id, fields or nil, owner, idle, deliveries}
    if state == 'reserved' then
      local ok, pend = pcall(redis.call, 'XPENDING', key, group, from, '+', rows_max)
      if ok then
        for _, p in ipairs(pend) do
          local e = redis.call('XRANGE', key, p[1], p[1])
          entries[#entries + 1] = {p[1], e[1] and e[1][2], p[2], p[3], p[4]}
        end
      end
    else
      if state == 'ready' and group then  -- ready: not yet delivered to the group
        local ok, infos = pcall(redis.call, 'XINFO', 'GROUPS', key)
        for _, g in ipairs(ok and infos or {}) do
          local name, last = nil, nil
          for j = 1, #g, 2 do
            if g[j] == 'name' then name = g[j + 1] end
            if g[j] == 'last-delivered-id' then last = g[j + 1] end
          end
          if name == group and last and (from == '-' or not id_lt(last, from)) then
            from = after(last)
          end
        end
      end
      for _, e in ipairs(redis.call('XRANGE', key, from, '+', 'COUNT', rows_max)) do
        entries[#entries + 1] = {e[1], e[2], '', 0, 0}
      end
    end
    local ids = {}
    for i, e in ipairs(entries) do
      local jid, err = '', ''
      for j = 1, #(e[2] or {}), 2 do
        if e[2][j] == 'id' then jid = e[2][j + 1] end
        if e[2][j] == 'error' then err = e[2][j + 1] end
      end
      e[6], e[7] = jid, err
      ids[i] = jid
    end
    local raws, covered = read_records(ids, budget / math.max(#topics, 1))
    local want = state == 'dead' and 'x' or 's'
    for i = 1, covered do
      local e = entries[i]
      local r = parse_record(raws[i])
      if r and r.state == want and r.entry == e[1] then
        local sub = state == 'ready' and 'ready' or (state == 'reserved' and 'reserved' or '')
        local raw = raws[i]
        if r.blob == '' and full_record(r, e[2]) then raw = raw .. r.blob end
        out[#out + 1] = {e[1], topic, e[6], raw, sub, e[3], e[4], e[5], e[7]}
      end
    end
    if covered > 0 and (covered < #entries or #entries >= rows_max) then
      local pos = {entries[covered][1], topic}
      if not reached or id_lt(pos[1], reached[1])
          or (pos[1] == reached[1] and lt(pos[2], reached[2])) then
        reached = pos
      end
    end
  end
end
if reached then out[2] = reached end
return out
