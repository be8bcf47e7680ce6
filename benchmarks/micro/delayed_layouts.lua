-- delayed_layouts: a measuring prototype of the compact delayed layout's candidates
-- (docs/design.md#compact-delayed-layout), used by benchmarks/micro/delayed_layouts.py only.
-- Not a protocol script: the package never loads it (lua/ holds those); it keeps no counts, no
-- wake marker and no events, and reads no meta field.
-- KEYS[1]: a partition's jobs key (PREFIX..'jobs'); every other key is derived from PREFIX.
-- ARGV[1] verb: 'add' | 'promote' | 'find' | 'cancel'; ARGV[2] layout:
--   'today'   one hash (id -> record) and one sorted set (id -> due), today's record;
--   'tree'    due times in time buckets (sorted sets id -> due), records in id shards (hashes
--             id -> record), both B-tree leaves (below), today's record;
--   'dense'   'tree' with the dense record: due|delay|attempts|ttr|max|entry|topic|blob
--             (delay = due - created; attempts empty for 0, ttr for 60000, max for 10);
--   'packed'  'dense' with an id of 32 lower-case hex digits kept as \255 and its 16 bytes;
--   'zrec'    the record (dense, without its due) in the time bucket, member '<id>|<record>';
--             the id shards keep id -> due only; 'zpacked': with packed ids;
--   'list'    the record (dense, without its due) in a list beside the time bucket
--             (PREFIX..'l:'..n, one element per job), the bucket's member '<id>|<position>';
--             the id shards keep id -> due only; 'lpacked': with packed ids;
--   'lazy'    'list' whose promote leaves the id shards alone: a shard field whose due time is
--             earlier than the first delayed job's is stale (its job left), and each promote
--             call sweeps shards (in turn, from a cursor) until it has looked at 4 fields per job
--             it moved (at most 16 shards); an insert that finds a stale field takes its place;
--   'lcheap'  'lazy' with a record rebuilt by concatenation: attempts|created|ttr|max|entry|
--             topic|blob (today's record without state and due, nothing left out).
-- add: ARGV[3..] groups of 7: id, due ms, created ms, ttr ms, max attempts, topic, blob.
--   Returns how many were added (an id already there is skipped).
-- promote: ARGV[3] now ms, ARGV[4] limit. Moves up to limit due jobs, earliest first, into
--   PREFIX..'t:'..topic (XADD id, rec: today's whole record) and writes each one's state-s
--   record in PREFIX..'jobs', as promoteDue does. Returns {moved, first due moved, last}.
-- find: ARGV[3..] ids. Returns, per id, its due time found through the layout's lookup path
--   (id shard, then the bucket of that due time), or -1.
-- cancel: ARGV[3..] ids. Removes each delayed job found (a list element becomes a hole; a
--   bucket's last job takes its list and its index entry); returns how many were removed.
-- The two B-trees:
--   time tree: PREFIX..'db' sorted set, bucket number -> its lower bound (a due ms); bucket
--     PREFIX..'d:'..n a sorted set of at most CAP members (listpack-encoded). A due time goes
--     to the bucket with the greatest bound <= it (the first bucket when none: its bound moves
--     down). A bucket past CAP splits in half, or, when the new member is the bucket's last (due
--     times that grow, the common case), its last TAIL members go; the cut moves to a change of
--     due time when the bucket has one, else one due time spans buckets (holder() below).
--   id tree: PREFIX..'dk' sorted set of shard lower bounds (score 0, ordered by bytes; ''
--     always there); shard PREFIX..'dj:'..bound a hash of at most CAP fields. An id goes to the
--     shard with the greatest bound <= it (ZRANGE BYLEX REV LIMIT 1: O(log N)); a shard past
--     CAP splits in half by id; an emptied shard's bound goes.
local P = string.sub(KEYS[1], 1, -5)
local verb, layout = ARGV[1], ARGV[2]
local CAP, TAIL = 100, 12
local call = redis.call
local TODAY = layout == 'today' or layout == 'tree' -- today's record
local ZREC = layout == 'zrec' or layout == 'zpacked'
local CHEAP = layout == 'lcheap'
local LAZY = layout == 'lazy' or CHEAP
local LIST = layout == 'list' or layout == 'lpacked' or LAZY
local PACK = layout == 'packed' or layout == 'zpacked' or layout == 'lpacked'
local TB, TK = P .. 'db', P .. 'dk'

local function packed(id)
  if PACK and #id == 32 and not string.find(id, '[^0-9a-f]') then
    return '\255' .. (string.gsub(id, '..', function(h) return string.char(tonumber(h, 16)) end))
  end
  return id
end
local function unpacked(key)
  if string.byte(key, 1) ~= 255 then return key end
  return (string.gsub(string.sub(key, 2), '.', function(c) return string.format('%02x', string.byte(c)) end))
end
-- a member '<key>|<rest>' ('|' may be one of a packed id's 16 bytes: its length is fixed)
local function member_parts(m)
  local cut = string.byte(m, 1) == 255 and 18 or string.find(m, '|', 1, true)
  return string.sub(m, 1, cut - 1), string.sub(m, cut + 1)
end

-- the stored record of a new delayed job
local function record(due, created, ttr, max, topic, blob)
  if TODAY then
    return string.format('d|0|%d|%d|%s|%s||', due, created, ttr, max) .. topic .. '|' .. blob
  end
  if CHEAP then return string.format('0|%d|%s|%s||', created, ttr, max) .. topic .. '|' .. blob end
  local tail = string.format('%d||', due - created) .. (ttr == '60000' and '' or ttr) .. '|' ..
               (max == '10' and '' or max) .. '||' .. topic .. '|' .. blob
  if ZREC or LIST then return tail end
  return string.format('%d|', due) .. tail
end
-- today's whole record (state d) of a stored one, and its topic: what promoteDue puts in the
-- stream entry's 'rec' whatever the layout, so a worker reads the same entry
local function whole(rec, due, due_text)
  if CHEAP then
    local cut = string.find(rec, '|', 1, true)
    rec = 'd|' .. string.sub(rec, 1, cut - 1) .. '|' .. due_text .. string.sub(rec, cut)
  end
  if TODAY or CHEAP then return rec, string.match(rec, '^d|%d+|%d+|%d+|%d+|%d+|[^|]*|([^|]+)|') end
  if ZREC or LIST then rec = string.format('%d|', due) .. rec end
  local d, delay, att, ttr, max, rest = string.match(rec, '^(%d+)|(%d+)|(%d*)|(%d*)|(%d*)(|.*)$')
  return string.format('d|%s|%s|%d|%s|%s', att == '' and '0' or att, d, tonumber(d) - tonumber(delay),
                       ttr == '' and '60000' or ttr, max == '' and '10' or max) .. rest,
         string.match(rest, '^|[^|]*|([^|]+)|')
end
local function due_of(rec) -- of a record in an id shard ('tree', 'dense', 'packed')
  if TODAY then return tonumber(string.match(rec, '^d|%d+|(%d+)|')) end
  return tonumber(string.match(rec, '^(%d+)|'))
end

-- ids in byte order, as ZRANGE BYLEX orders them (Lua's '<' on strings follows the server's
-- collation locale, which Redis takes from its environment)
local function bytes_lt(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

local function shard_of(key)
  local lb = call('ZRANGE', TK, '[' .. key, '-', 'BYLEX', 'REV', 'LIMIT', 0, 1)[1]
  if not lb then call('ZADD', TK, 0, ''); lb = '' end
  return lb
end
local function bucket_of(due, create)
  local b = call('ZRANGE', TB, due, '-inf', 'BYSCORE', 'REV', 'LIMIT', 0, 1)[1]
  if b or not create then return b end
  b = call('ZRANGE', TB, 0, 0)[1] or tostring(call('HINCRBY', P .. 'meta', 'db_seq', 1))
  call('ZADD', TB, due, b)
  return b
end

-- the bucket that holds member key (its id's key, before '|' in 'zrec' and 'list') with due
-- time due, and the member: the last bucket whose bound is <= due, then the ones before it
-- while their bound is due too (more than CAP jobs of one ms fill several buckets)
local function holder(key, due)
  local rows = call('ZRANGE', TB, due, '-inf', 'BYSCORE', 'REV', 'LIMIT', 0, 16, 'WITHSCORES')
  for i = 1, #rows, 2 do
    local bk = P .. 'd:' .. rows[i]
    if ZREC or LIST then
      for _, m in ipairs(call('ZRANGE', bk, due, due, 'BYSCORE')) do
        if member_parts(m) == key then return rows[i], m end
      end
    elseif call('ZSCORE', bk, key) then
      return rows[i], key
    end
    if tonumber(rows[i + 1]) < due then return nil end
  end
  return nil
end

local function split_shard(shard)
  local all = call('HKEYS', shard)
  table.sort(all, bytes_lt)
  local mid = math.floor(#all / 2) + 1
  local moved = {}
  for i = mid, #all do moved[#moved + 1] = all[i] end
  local vals = call('HMGET', shard, unpack(moved))
  local args = {}
  for i = 1, #moved do args[2 * i - 1] = moved[i]; args[2 * i] = vals[i] end
  call('HSET', P .. 'dj:' .. all[mid], unpack(args))
  call('HDEL', shard, unpack(moved))
  call('ZADD', TK, 0, all[mid])
end
-- a list bucket's members rewritten: the records of rows (member, score pairs from rank from
-- to rank to, 0-based) pushed on a fresh list, the members renumbered (the holes go)
local function relist(b, rows, from, to, records)
  local lk, bk = P .. 'l:' .. b, P .. 'd:' .. b
  local recs, members = {}, {}
  for i = from, to do
    local key, pos = member_parts(rows[2 * i + 1])
    recs[#recs + 1] = records[tonumber(pos) + 1]
    members[#members + 1] = rows[2 * i + 2]
    members[#members + 1] = key .. '|' .. (#recs - 1)
  end
  call('DEL', lk, bk)
  call('RPUSH', lk, unpack(recs))
  call('ZADD', bk, unpack(members))
end
local function split_bucket(b, n, last)
  local bk = P .. 'd:' .. b
  -- the cut: TAIL from the end when the new member came last, else the middle, then moved
  -- down to a change of due time (up when there is none below); a bucket of one due time is
  -- cut where it is (that due time then has two buckets: holder() looks in both)
  local cut = last and n - TAIL or math.floor(n / 2)
  local rows = call('ZRANGE', bk, 0, -1, 'WITHSCORES')
  local function score(i) return rows[2 * i + 2] end -- rank i, from 0
  local c = cut
  while c > 0 and score(c - 1) == score(c) do c = c - 1 end
  if c == 0 then
    c = cut
    while c < n and score(c - 1) == score(c) do c = c + 1 end
    if c == n then c = cut end
  end
  local nb = tostring(call('HINCRBY', P .. 'meta', 'db_seq', 1))
  if LIST then
    local records = call('LRANGE', P .. 'l:' .. b, 0, -1)
    relist(nb, rows, c, n - 1, records)
    relist(b, rows, 0, c - 1, records)
  else
    local args = {}
    for i = c, n - 1 do args[#args + 1] = score(i); args[#args + 1] = rows[2 * i + 1] end
    call('ZADD', P .. 'd:' .. nb, unpack(args))
    call('ZREMRANGEBYRANK', bk, c, -1)
  end
  call('ZADD', TB, score(c), nb)
end

if verb == 'add' then
  local added = 0
  for i = 3, #ARGV, 7 do
    local id, due = ARGV[i], tonumber(ARGV[i + 1])
    local rec = record(due, tonumber(ARGV[i + 2]), ARGV[i + 3], ARGV[i + 4], ARGV[i + 5], ARGV[i + 6])
    if layout == 'today' then
      if call('HSETNX', P .. 'jobs', id, rec) == 1 then
        call('ZADD', P .. 'delayed', due, id)
        added = added + 1
      end
    else
      local key = packed(id)
      local shard = P .. 'dj:' .. shard_of(key)
      -- (the real script also looks in PREFIX..'jobs': an id is free when in neither)
      local fresh = call('HSETNX', shard, key, (ZREC or LIST) and due or rec) == 1
      if not fresh and LAZY then
        local old = tonumber(call('HGET', shard, key))
        if not holder(key, old) then call('HSET', shard, key, due); fresh = true end
      end
      if fresh then
        added = added + 1
        if call('HLEN', shard) > CAP then split_shard(shard) end
        local b = bucket_of(due, true)
        local bk = P .. 'd:' .. b
        local member = key
        if ZREC then member = key .. '|' .. rec
        elseif LIST then member = key .. '|' .. (call('RPUSH', P .. 'l:' .. b, rec) - 1) end
        call('ZADD', bk, due, member)
        local n = call('ZCARD', bk)
        if n > CAP then split_bucket(b, n, call('ZRANK', bk, member) == n - 1) end
      end
    end
  end
  return added
end

if verb == 'find' then
  local out = {}
  for i = 3, #ARGV do
    local id, due = ARGV[i], -1
    if layout == 'today' then
      local rec = call('HGET', P .. 'jobs', id)
      if rec and call('ZSCORE', P .. 'delayed', id) then due = due_of(rec) end
    else
      local key = packed(id)
      local rec = call('HGET', P .. 'dj:' .. shard_of(key), key)
      local at = rec and ((ZREC or LIST) and tonumber(rec) or due_of(rec))
      if at and holder(key, at) then due = at end
    end
    out[#out + 1] = due
  end
  return out
end

if verb == 'cancel' then
  local removed = 0
  for i = 3, #ARGV do
    local id = ARGV[i]
    if layout == 'today' then
      if call('ZREM', P .. 'delayed', id) == 1 then call('HDEL', P .. 'jobs', id); removed = removed + 1 end
    else
      local key = packed(id)
      local lb = shard_of(key)
      local shard = P .. 'dj:' .. lb
      local rec = call('HGET', shard, key)
      local at = rec and ((ZREC or LIST) and tonumber(rec) or due_of(rec))
      local b, member = nil, nil
      if at then b, member = holder(key, at) end
      if b then
        local bk = P .. 'd:' .. b
        call('ZREM', bk, member)
        if call('EXISTS', bk) == 0 then
          call('DEL', P .. 'l:' .. b) -- the bucket's last job: its list (holes and all) goes
          call('ZREM', TB, b)
        elseif LIST then
          local _, pos = member_parts(member)
          call('LSET', P .. 'l:' .. b, tonumber(pos), '') -- a hole until the list goes
        end
        call('HDEL', shard, key)
        if lb ~= '' and call('EXISTS', shard) == 0 then call('ZREM', TK, lb) end
        removed = removed + 1
      end
    end
  end
  return removed
end

-- promote
local now, limit = tonumber(ARGV[3]), tonumber(ARGV[4])
local writes, moved, first, last = {}, 0, -1, -1
local function move(id, rec, due, due_text)
  local full, topic = whole(rec, due, due_text)
  local entry = call('XADD', P .. 't:' .. topic, '*', 'id', id, 'rec', full)
  local head, rest = string.match(full, '^d(|%d+|%d+|%d+|%d+|%d+|)[^|]*(|.*)$')
  writes[#writes + 1] = id
  writes[#writes + 1] = 's' .. head .. entry .. rest
  moved = moved + 1
  if first < 0 then first = due end
  last = due
end
if layout == 'today' then
  local rows = call('ZRANGE', P .. 'delayed', '-inf', now, 'BYSCORE', 'LIMIT', 0, limit, 'WITHSCORES')
  if #rows > 0 then
    local ids = {}
    for i = 1, #rows, 2 do ids[#ids + 1] = rows[i] end
    local recs = call('HMGET', P .. 'jobs', unpack(ids))
    for i = 1, #ids do move(ids[i], recs[i], tonumber(rows[2 * i])) end
    call('ZREMRANGEBYRANK', P .. 'delayed', 0, #ids - 1)
  end
else
  while moved < limit do
    local b = call('ZRANGE', TB, 0, 0)[1]
    if not b then break end
    local bk, lk = P .. 'd:' .. b, P .. 'l:' .. b
    local rows = call('ZRANGE', bk, '-inf', now, 'BYSCORE', 'LIMIT', 0, limit - moved, 'WITHSCORES')
    local k = #rows / 2
    local whole_bucket = k > 0 and k == call('ZCARD', bk)
    -- a list bucket: one LRANGE when many are due, else one LINDEX each
    local records = (LIST and k >= 8) and call('LRANGE', lk, 0, -1) or nil
    local keys = {}
    for i = 1, #rows, 2 do
      local key, rec = rows[i], nil
      if ZREC then key, rec = member_parts(key)
      elseif LIST then
        local pos
        key, pos = member_parts(key)
        pos = tonumber(pos)
        rec = records and records[pos + 1] or call('LINDEX', lk, pos)
        if not whole_bucket then call('LSET', lk, pos, '') end -- a hole until the list goes
      else
        local shard = P .. 'dj:' .. shard_of(key)
        rec = call('HGET', shard, key)
      end
      keys[#keys + 1] = key
      move(unpacked(key), rec, tonumber(rows[i + 1]), rows[i + 1])
    end
    -- the id shards, ids sorted: one lookup and one HDEL per run of ids in one shard (ids of
    -- one run, like e1..e200, share a few shards). Lua's sort follows the server's collation
    -- locale, so a run is cut by a byte comparison with the shard's upper bound: another order
    -- only makes more runs
    table.sort(keys)
    local j = 1
    while j <= #keys and not LAZY do
      local lb = shard_of(keys[j])
      local upper = j < #keys and call('ZRANGE', TK, '(' .. lb, '+', 'BYLEX', 'LIMIT', 0, 1)[1]
      local batch = {}
      while j <= #keys and (not upper or bytes_lt(keys[j], upper)) do batch[#batch + 1] = keys[j]; j = j + 1 end
      local shard = P .. 'dj:' .. lb
      call('HDEL', shard, unpack(batch))
      if lb ~= '' and call('EXISTS', shard) == 0 then call('ZREM', TK, lb) end
    end
    if whole_bucket then
      call('DEL', bk, lk)
      call('ZREM', TB, b) -- an emptied bucket: the next one may hold due jobs too
    else
      if k > 0 then call('ZREMRANGEBYRANK', bk, 0, k - 1) end
      break
    end
  end
end
-- 'lazy': sweep the id shards for fields whose job left (due earlier than the first delayed one)
if LAZY and moved > 0 then
  local b = call('ZRANGE', TB, 0, 0)[1]
  local head = b and call('ZRANGE', P .. 'd:' .. b, 0, 0, 'WITHSCORES')[2]
  local first_due = head and tonumber(head) or math.huge
  local cursor = call('HGET', P .. 'meta', 'dk_cursor') or ''
  local looked, shards = 0, 0
  while looked < 4 * moved and shards < 16 do
    local shard = P .. 'dj:' .. cursor
    local fields = call('HGETALL', shard)
    local stale = {}
    for i = 1, #fields, 2 do
      if tonumber(fields[i + 1]) < first_due then stale[#stale + 1] = fields[i] end
    end
    if #stale > 0 then call('HDEL', shard, unpack(stale)) end
    if cursor ~= '' and #stale * 2 == #fields then call('ZREM', TK, cursor) end
    looked, shards = looked + #fields / 2, shards + 1
    cursor = call('ZRANGE', TK, '(' .. cursor, '+', 'BYLEX', 'LIMIT', 0, 1)[1] or ''
  end
  call('HSET', P .. 'meta', 'dk_cursor', cursor)
end
if #writes > 0 then call('HSET', P .. 'jobs', unpack(writes)) end
return {moved, first, last}
