-- Holding a job's next run behind the delivery that still runs it (docs/guarantees.md#never-
-- twice-at-once). A job given a new due time (reschedule, enqueue with replace) while a consumer
-- runs it keeps that delivery: the entry stays in its stream and in the group's pending list,
-- and the job's record goes to state d with that entry's id in its entry field (a held record;
-- any other d record has an empty entry). Its delayed-set score is max(due, the delivery's lease
-- end), so promoteDue (unchanged) cannot move it while the run may go on. The delivery's settle
-- (ack, fail, hand-back) or the end of its lease (requeueStuck) frees the job: entry emptied,
-- score back to its due (release_hold); a heartbeat moves the score on with the lease
-- (extend_hold). An older process reads a held record as a delayed job: its settle frees
-- nothing, so the job waits for the lease end instead (docs/keys.md#versioning).
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

-- lease_end(topic, eid, ttr, now): when a consumer of topic's group holds delivery eid (it is
-- in the pending list), the end of its lease: its last delivery or heartbeat plus the ttr its
-- entry carries (ttr when the entry has none); nil when no consumer holds it.
local function lease_end(topic, eid, ttr, now)
  local group = redis.call('HGET', K_GROUPS, topic)
  if not group or eid == '' then return nil end
  local sk = stream_key(topic)
  local row = redis.pcall('XPENDING', sk, group, eid, eid, 1)
  if type(row) ~= 'table' or row.err or not row[1] then return nil end
  local e = redis.call('XRANGE', sk, eid, eid)[1]
  return now - tonumber(row[1][3]) + (entry_ttr(e and e[2]) or ttr)
end

-- hold_of(r, id, now): for job id (record r) about to get a new due time: the entry of the
-- delivery that still runs it and the earliest time its next run may start; nil when none runs
-- (ready, delayed, dead, done). A record already held whose delivery its topic's stream does
-- not list (a replace changed the topic, or an older process settled it) keeps its score as
-- the bound: later than needed at worst, never early.
local function hold_of(r, id, now)
  if r.entry == '' or (r.state ~= 's' and r.state ~= 'd') then return nil end
  local ends = lease_end(r.topic, r.entry, r.ttr, now)
  if ends then return r.entry, ends end
  if r.state == 'd' then
    local score = redis.call('ZSCORE', K_DELAYED, id)
    if score then return r.entry, tonumber(score) end
  end
  return nil
end

-- release_hold(id, eid, floor): delivery eid settled, was handed back or lost its lease: job id,
-- when held behind it, is freed: empty entry, score its own due (not before floor, epoch ms,
-- when given: a hand-back whose thread may still run). Returns true when it freed one.
local function release_hold(id, eid, floor)
  local r = parse_record(redis.call('HGET', K_JOBS, id))
  if not (r and r.state == 'd' and r.entry == eid and eid ~= '') then return false end
  r.entry = ''
  redis.call('HSET', K_JOBS, id, build_record(r))
  local score = r.due
  if floor and floor > score then score = floor end
  redis.call('ZADD', K_DELAYED, score, id)
  wake_if_head(id, score)
  return true
end

-- extend_hold(topic, eid, now): after a heartbeat of delivery eid: when its job is held behind
-- it, the job's score follows the lease (now + the entry's ttr). Returns true when held.
local function extend_hold(topic, eid, now)
  local e = redis.call('XRANGE', stream_key(topic), eid, eid)[1]
  if not e then return false end
  local id = nil
  for i = 1, #e[2], 2 do if e[2][i] == 'id' then id = e[2][i + 1] end end
  local r = id and parse_record(redis.call('HGET', K_JOBS, id))
  if not (r and r.state == 'd' and r.entry == eid) then return false end
  local ends = now + (entry_ttr(e[2]) or r.ttr)
  if ends > r.due then redis.call('ZADD', K_DELAYED, ends, id) end
  return true
end
