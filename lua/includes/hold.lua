-- Holding a job's next run behind the delivery that still runs it (docs/guarantees.md#never-
-- twice-at-once). A job given a new due time (reschedule, enqueue with replace) while a consumer
-- runs it keeps that delivery: the entry stays in its stream and in the group's pending list,
-- and the job's record goes to state d with that entry's id in its entry field (a held record;
-- any other d record has an empty entry). Its delayed-set score is max(due, the delivery's lease
-- end), so promoteDue (unchanged) cannot move it while the run may go on. The delivery's settle
-- (ack, fail, hand-back) or the end of its lease (requeueStuck) frees the job: entry emptied,
-- score back to its due (release_hold); a heartbeat moves the score on with the lease
-- (extend_hold).
-- @include keys
-- @include parse_record
-- @include build_record
-- @include wake_if_head

-- entry_ttr(fields): the ttr (ms) of the record a stream entry carries in its 'rec' field.
local function entry_ttr(fields)
  for i = 1, #(fields or {}), 2 do
    if fields[i] == 'rec' then
      return tonumber(string.match(fields[i + 1], '^[dsxc]|%d+|%d+|%d+|(%d+)|'))
    end
  end
  return nil
end

-- The index of held deliveries: PREFIX..'holds', a hash entry id -> '<job id>|<ttr ms of the
-- delivery>', so a heartbeat finds a held job without reading the stream entry (a body may be
-- large). It expires HOLD_SLACK_MS after the latest lease end it covers (each hold and each
-- heartbeat of one pushes it on): an entry left by a job cancelled or promoted while held goes
-- with it, never later than a minute after the last hold's lease.
-- check_hold_keys() refuses another type there (scripts that hold a job call it before their
-- first write); the settle paths only clean the index, with pcall, so they need no check.
local K_HOLDS = PREFIX .. 'holds'
local HOLD_SLACK_MS = 60000
local function check_hold_keys() refuse_wrong_type(K_HOLDS, 'hash') end
local function holds_until(at, now)
  -- EXPIRE only (the documented ACL line, docs/security.md): NX sets a first expiry, GT moves
  -- a later one on, never nearer
  local seconds = math.ceil((math.max(at, now) - now + HOLD_SLACK_MS) / 1000)
  redis.call('EXPIRE', K_HOLDS, seconds, 'NX')
  redis.call('EXPIRE', K_HOLDS, seconds, 'GT')
end

-- lease_end(topic, eid, ttr, now): when a consumer of topic's group holds delivery eid (it is
-- in the pending list), the end of its lease: its last delivery or heartbeat plus ttr (the
-- delivery's); nil when no consumer holds it.
local function lease_end(topic, eid, ttr, now)
  local group = redis.call('HGET', K_GROUPS, topic)
  if not group or eid == '' then return nil end
  local row = redis.pcall('XPENDING', stream_key(topic), group, eid, eid, 1)
  if type(row) ~= 'table' or row.err or not row[1] then return nil end
  return now - tonumber(row[1][3]) + ttr
end

-- held_ttr(eid, fallback): the ttr of held delivery eid as the index recorded it.
local function held_ttr(eid, fallback)
  local v = redis.call('HGET', K_HOLDS, eid)
  return tonumber(v and string.match(v, '|(%d+)$')) or fallback
end

-- hold_of(r, id, now): for job id (record r) about to get a new due time: the entry of the
-- delivery that still runs it and the earliest time its next run may start; nil when none runs
-- (ready, delayed, dead, done). Notes the hold in the index. A record already held whose
-- delivery its topic's stream does not list (a replace changed the topic) keeps its score as the bound: later than needed at worst, never early.
local function hold_of(r, id, now)
  if r.entry == '' or (r.state ~= 's' and r.state ~= 'd') then return nil end
  local ttr = r.ttr -- a record in its stream carries the delivery's own ttr
  if r.state == 'd' then ttr = held_ttr(r.entry, r.ttr) end
  local ends = lease_end(r.topic, r.entry, ttr, now)
  if not ends and r.state == 'd' then
    local score = redis.call('ZSCORE', K_DELAYED, id)
    ends = score and tonumber(score)
  end
  if not ends then return nil end
  redis.call('HSET', K_HOLDS, r.entry, id .. '|' .. string.format('%d', ttr))
  holds_until(ends, now)
  return r.entry, ends
end

-- release_hold(id, eid, floor): delivery eid settled, was handed back or lost its lease: job id,
-- when held behind it, is freed: empty entry, score its own due (not before floor, epoch ms,
-- when given: a hand-back whose thread may still run). Returns true when it freed one.
local function release_hold(id, eid, floor)
  local r = parse_record(redis.call('HGET', K_JOBS, id))
  if not (r and r.state == 'd' and r.entry == eid and eid ~= '') then return false end
  redis.pcall('HDEL', K_HOLDS, eid)
  r.entry = ''
  redis.call('HSET', K_JOBS, id, build_record(r))
  local score = r.due
  if floor and floor > score then score = floor end
  redis.call('ZADD', K_DELAYED, score, id)
  wake_if_head(id, score)
  return true
end

-- holds_exist(): whether any delivery is held (one EXISTS; a touch without holds pays only it).
local function holds_exist() return redis.call('EXISTS', K_HOLDS) == 1 end

-- extend_hold(eid, now): after a heartbeat of delivery eid: when a job is held behind it, the
-- job's score follows the lease (now + the delivery's ttr). Returns true when held.
local function extend_hold(eid, now)
  local v = redis.pcall('HGET', K_HOLDS, eid)
  if type(v) ~= 'string' then return false end
  local id, ttr = string.match(v, '^(.*)|(%d+)$')
  local r = id and parse_record(redis.call('HGET', K_JOBS, id))
  if not (r and r.state == 'd' and r.entry == eid) then
    -- the job was cancelled or moved on meanwhile: a stale index entry (a hash: HGET answered)
    redis.call('HDEL', K_HOLDS, eid)
    return false
  end
  local ends = now + tonumber(ttr)
  if ends > r.due then redis.call('ZADD', K_DELAYED, ends, id) end
  holds_until(ends, now)
  return true
end
