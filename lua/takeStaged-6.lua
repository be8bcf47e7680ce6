#!lua
-- takeStaged-6: take ready jobs of one staged topic for a consumer (docs/priorities.md): the
-- lanes of its keys take turns (round robin), each lane gives its best job (priority with
-- aging), no key past its key limit and no more than the topic's own limit lets start now. The
-- one place where a staged topic's jobs are taken.
-- KEYS: the six partition keys (includes/keys.lua); touches PREFIX..'t:'..topic, the staging
-- keys (includes/staging.lua), the key limit keys (includes/key_limits.lua) and, with ARGV[5],
-- the topic limit keys (includes/release_lease.lua).
-- ARGV[1] group, ARGV[2] consumer, ARGV[3] topic, ARGV[4] wanted (the free slots, 1..1000),
-- ARGV[5] '1': also hold the topic to its rate and concurrency in PREFIX..'limits' (as
-- takeLimited; partition 0, where a topic's limit lives), '0' or absent: the caller took care
-- of them (partition p != 0: ARGV[4] is the grant of acquireLimit, nameLeases follows).
-- 1. Undelivered entries already in the stream (jobs handed back at shutdown or reclaimed by
--    requeueStuck, which put them at the stream tail, and jobs promoted before the topic was
--    staged) are read first (XREADGROUP), until wanted were taken or none is left (at most
--    wanted + LOOK); one whose key is at its limit goes back to its lane. Step 2 runs only once none
--    is left, so step 3 delivers exactly what step 2 added.
-- 2. Then, while wanted is not reached and at most LOOK lanes were looked at: lanes parked by a
--    key limit whose time came go back to the turns; the lane whose turn it is gives its best
--    job (lowest rank), unless its key is at a limit (the lane is parked until the key may go
--    again: its earliest lease end or next token; a freed lease un-parks it at once). The lane
--    then goes to the back of the turns. Each job taken is XADDed to the stream (rec: the record
--    in state s; p: its priority, for the per-priority lateness metric; x: its deadline, when it
--    has one, for the open step) and its record becomes s with that entry. A job past its
--    deadline is not taken: it goes to its dead letters with the error 'expired'
--    (includes/expired.lua, docs/expiry.md), no attempt spent.
-- 3. One XREADGROUP delivers what step 2 added (they are the only new entries by then).
-- Key leases (includes/key_limits.lua): one per delivery of a key with a key concurrency,
-- member the entry id, score the job's ttr; a lease counts while its entry is in the group's
-- pending list and idle less than that ttr (XPENDING), so a heartbeat keeps it and a worker
-- killed with -9 loses it one ttr after its last heartbeat.
-- Returns {entries, reason, wait_ms, ''}: entries as XREADGROUP gives them; reason 0 got all
-- that was wanted, 1 the topic's rate holds back (wait_ms: until its next token), 2 the topic's
-- concurrency (wait_ms: until its earliest lease expires; limitwake is pushed when one is freed),
-- 3 nothing more can start now (wait_ms: until the earliest parked lane may go again, 0: none
-- is parked; stagewake is pushed when a job becomes ready or a key lease is freed).
-- Errors: 'SDERR NO_GROUP <topic>', 'SDERR WRONG_TYPE <key> <type>' (checked before any write),
-- 'SDERR BAD_ARGS'.
-- Retry-safe as a read is: a lost reply leaves the entries in this consumer's pending list
-- (with their leases), where the worker's own-pending look finds them.
-- @include server_time
-- @include keys
-- @include release_lease
-- @include parse_record
-- @include build_record
-- @include full_record
-- @include staging
-- @include limit_check
-- @include topic_limit
-- @include key_limits
-- @include blob_keep
-- @include keep_result
-- @include emit_event
-- @include new_record
-- @include wake_if_head
-- @include dead_result
-- @include flow_keep
-- @include flow
-- @include end_dead
-- @include expired

local LOOK = 256 -- lanes looked at per call at most (parked or taken)
local now = server_time()
local group, me, topic, wanted = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
if not wanted or wanted < 1 or wanted > 1000 then return redis.error_reply('SDERR BAD_ARGS') end
local sk = stream_key(topic)
check_partition_keys()
refuse_wrong_type(sk, 'stream'); check_stage_keys(topic); check_key_limit_keys(topic)
if redis.call('EXISTS', sk) == 0 then return redis.error_reply('SDERR NO_GROUP ' .. topic) end

-- the topic's own limit (partition 0: the limits hash is in this slot)
local k, reason, wait = wanted, 0, 0
local tl = nil
if ARGV[5] == '1' then
  check_topic_limit_keys(topic)
  tl = topic_limit(topic, now, wanted)
  k, reason, wait = tl.k, tl.reason, tl.wait
end
load_key_limits(topic)

local function xreadgroup(count)
  local ok, reply = pcall(redis.call, 'XREADGROUP', 'GROUP', group, me, 'COUNT', count, 'STREAMS', sk, '>')
  if not ok then
    if string.find(tostring(reply.err or reply), 'NOGROUP') then
      error({err = 'SDERR NO_GROUP ' .. topic})
    end
    error(reply)
  end
  return reply and reply[1] and reply[1][2] or {}
end
local function field(fields, name)
  for f = 1, #fields, 2 do if fields[f] == name then return fields[f + 1] end end
  return nil
end

local entries = {}
-- 1. entries already in the stream, not yet delivered, read until k were taken or none is
-- left: step 3's XREADGROUP delivers the oldest undelivered entries, so step 2 may add only
-- once none is left (else step 3 would deliver one of those, unchecked and unleased, and
-- leave the job step 2 leased undelivered). At most k + LOOK looked at; past that, no step 2
-- (the reply says 'got all': the caller takes again at once).
local drained = true
if k > 0 then
  local looked, cap = 0, k + LOOK
  while #entries < k do
    if looked >= cap then drained = false break end
    local want = math.min(k - #entries, cap - looked)
    local batch = xreadgroup(want)
    looked = looked + #batch
    for _, e in ipairs(batch) do
      local eid, fields = e[1], e[2]
      local id = field(fields, 'id') or ''
      local key = job_key(id)
      local r = parse_record(redis.call('HGET', K_JOBS, id))
      local current = r and r.state == 's' and r.entry == eid
      if current and key ~= '' and not key_may_start(topic, key, group, now) then
        -- back to its lane: no attempt spent, taken when its key may start again
        redis.call('XACK', sk, group, eid)
        if full_record(r, fields) then
          redis.call('XDEL', sk, eid)
          r.state, r.entry = 'r', ''
          redis.call('HSET', K_JOBS, id, build_record(r))
          stage(id, topic, r.due)
        end
      else
        if current and key ~= '' then key_started(topic, key, eid, r.ttr, now) end
        entries[#entries + 1] = e
      end
    end
    if #batch < want then break end -- none left undelivered
  end
end

-- 2. the lanes, in turns
local added = 0
if drained and #entries < k then
  local lk, pk = lanes_key(topic), parked_key(topic)
  for _, key in ipairs(redis.call('ZRANGEBYSCORE', pk, '-inf', now, 'LIMIT', 0, 64)) do
    redis.call('ZREM', pk, key)
    if redis.call('EXISTS', lane_key(topic, key)) == 1 then lane_to_back(topic, key) end
  end
  local looked = 0
  while #entries + added < k and looked < LOOK do
    local head = redis.call('ZRANGE', lk, 0, 0)
    if not head[1] then break end
    looked = looked + 1
    local key = head[1]
    local ln = lane_key(topic, key)
    local ok, until_ms = true, nil
    if key ~= '' then ok, until_ms = key_may_start(topic, key, group, now) end
    if not ok then
      redis.call('ZREM', lk, key)
      redis.call('ZADD', pk, until_ms, key)
    else
      local top = redis.call('ZPOPMIN', ln)
      local id = top[1]
      if id then
        local r = parse_record(redis.call('HGET', K_JOBS, id))
        local deadline = r and r.state == 'r' and r.topic == topic and job_deadline(id)
        if deadline and now >= deadline then
          -- past its deadline (docs/expiry.md): never run, its dead letter says 'expired'
          -- (includes/expired.lua); when that key is no stream, it waits in its lane again
          if not expire_job(id, r, now) then stage(id, topic, r.due) end
        elseif r and r.state == 'r' and r.topic == topic then
          r.state, r.entry = 's', ''
          local eid
          local ck = redis.pcall('HGET', PREFIX .. 'ck', id) -- docs/worker.md#checkpoints
          if type(ck) ~= 'string' then ck = nil end -- none, or a foreign value: ignored
          if ck and deadline then
            eid = redis.call('XADD', sk, '*', 'id', id, 'rec', build_record(r),
                             'p', job_priority(id), 'c', ck, 'x', deadline)
          elseif ck then
            eid = redis.call('XADD', sk, '*', 'id', id, 'rec', build_record(r),
                             'p', job_priority(id), 'c', ck)
          elseif deadline then -- the open step checks it again against the take's clock
            eid = redis.call('XADD', sk, '*', 'id', id, 'rec', build_record(r),
                             'p', job_priority(id), 'x', deadline)
          else
            eid = redis.call('XADD', sk, '*', 'id', id, 'rec', build_record(r),
                             'p', job_priority(id))
          end
          r.entry = eid
          redis.call('HSET', K_JOBS, id, build_record(r))
          if key ~= '' then key_started(topic, key, eid, r.ttr, now) end
          added = added + 1
        end
        tally(topic, key, -1)
      end
      if lane_left(topic, key) then lane_to_back(topic, key) end
    end
  end
end

-- 3. deliver what step 2 added
if added > 0 then
  for _, e in ipairs(xreadgroup(added)) do entries[#entries + 1] = e end
end
flush_tally()
local got = #entries
if tl then topic_limit_took(topic, tl, entries, now) end
if got < k and drained then
  reason, wait = 3, 0
  local first = redis.call('ZRANGE', parked_key(topic), 0, 0, 'WITHSCORES')
  if first[2] then wait = math.max(tonumber(first[2]) - now, 1) end
end
return {entries, reason, wait, ''}
