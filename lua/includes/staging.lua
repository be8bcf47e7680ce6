-- staging: staged topics (docs/priorities.md): a topic that has ever had a job with a priority other
-- than 5 or a fairness key is named in PREFIX..'staged' (hash topic -> 1). Its due jobs do not
-- go to the topic stream: they wait, in state 'r' (ready, record entry empty), in per-key lanes
-- until a consumer takes them (takeStaged), which moves them into the stream and delivers them
-- in the same call. Keys of a staged topic (all in the partition's hash tag):
--   PREFIX..'rq:'..topic..'|'..key  zset job id -> rank (due_ms - priority * aging_ms): a lane;
--                                   the jobs without a key form the lane of key ''
--   PREFIX..'lanes:'..topic         zset key -> turn: the lanes that may go, in turns (the
--                                   lowest turn goes next, then goes to the back)
--   PREFIX..'parked:'..topic        zset key -> epoch ms: lanes a key limit holds back, until
--                                   then (or until a lease of the key is freed)
--   PREFIX..'backlog:'..topic       zset key -> ready jobs of the key (stats: top keys)
--   PREFIX..'ready'                 hash topic -> ready jobs waiting in the topic's lanes
--   PREFIX..'stagewake:'..topic     list: one element per event a waiting taker wants (new
--                                   ready jobs, a freed key lease), at most 64 (BLPOP)
-- A lane is non-empty exactly when its key is in lanes or parked (a taker drops a stale one).
-- The fairness key of a job is the tag of its id: '{key}rest' (docs/priorities.md#keys).
-- @include keys
local function lane_key(topic, key) return PREFIX .. 'rq:' .. topic .. '|' .. key end
local function lanes_key(topic) return PREFIX .. 'lanes:' .. topic end
local function parked_key(topic) return PREFIX .. 'parked:' .. topic end
local function backlog_key(topic) return PREFIX .. 'backlog:' .. topic end
local function stagewake_key(topic) return PREFIX .. 'stagewake:' .. topic end
local K_READY = PREFIX .. 'ready'
local DEFAULT_AGING_MS = 10000

-- job_key(id): the fairness key of a job id ('' for an id without a '{key}' tag)
local function job_key(id)
  if string.byte(id, 1) ~= 123 then return '' end -- '{'
  return string.match(id, '^{([^}]+)}') or ''
end

-- check_stage_keys(topic): refuse a wrong type of the topic's staging keys (before a write)
local function check_stage_keys(topic)
  refuse_wrong_type(lanes_key(topic), 'zset'); refuse_wrong_type(parked_key(topic), 'zset')
  refuse_wrong_type(backlog_key(topic), 'zset'); refuse_wrong_type(K_READY, 'hash')
  refuse_wrong_type(stagewake_key(topic), 'list')
end

-- lane_to_back(topic, key): the lane takes its next turn after every lane now waiting
local function lane_to_back(topic, key)
  local lk = lanes_key(topic)
  local last = redis.call('ZRANGE', lk, -1, -1, 'WITHSCORES')
  redis.call('ZADD', lk, last[2] and tonumber(last[2]) + 1 or 1, key)
end

local function wake_takers(topic)
  local wk = stagewake_key(topic)
  redis.call('LPUSH', wk, '1')
  redis.call('LTRIM', wk, 0, 63)
end

-- staged_topic(topic): whether topic is staged; one EXISTS per call while none is, then one
-- HGET per topic and call
local staged_cache, any_staged = {}, nil
local function staged_topic(topic)
  if any_staged == nil then any_staged = redis.call('EXISTS', PREFIX .. 'staged') == 1 end
  if not any_staged then return false end
  local s = staged_cache[topic]
  if s == nil then
    s = redis.call('HEXISTS', PREFIX .. 'staged', topic) == 1
    staged_cache[topic] = s
  end
  return s
end

-- job_priority(id): a job's priority from PREFIX..'opts' (5 without a field);
-- job_rank(id, due): the lane rank of a job: due - priority * aging (lower goes first), the
-- priority from PREFIX..'opts' ('<priority>|<deadline_ms>|<key>', absent: 5), the aging from
-- field 'priority_aging' of PREFIX..'meta' (ms, absent: 10 s)
local aging_ms, any_opts = nil, nil
local function job_priority(id)
  if any_opts == nil then any_opts = redis.call('EXISTS', PREFIX .. 'opts') == 1 end
  if any_opts then
    local o = redis.call('HGET', PREFIX .. 'opts', id)
    if o then return tonumber(string.match(o, '^(%d)')) or 5 end
  end
  return 5
end
local function job_rank(id, due)
  if aging_ms == nil then
    aging_ms = tonumber(redis.call('HGET', PREFIX .. 'meta', 'priority_aging')) or DEFAULT_AGING_MS
  end
  return due - job_priority(id) * aging_ms
end

-- The ready counts (K_READY per topic, backlog per key) move by a tally kept during the call
-- and written once per topic and key by flush_tally(): every script that stages or takes calls
-- it before it returns.
local tally_topics, tally_keys = {}, {}
local function tally(topic, key, n)
  tally_topics[topic] = (tally_topics[topic] or 0) + n
  local t = tally_keys[topic]
  if not t then t = {}; tally_keys[topic] = t end
  t[key] = (t[key] or 0) + n
end
local function flush_tally()
  for topic, n in pairs(tally_topics) do
    if n ~= 0 and redis.call('HINCRBY', K_READY, topic, n) <= 0 then
      redis.call('HDEL', K_READY, topic)
    end
  end
  for topic, keys in pairs(tally_keys) do
    local bk = backlog_key(topic)
    for key, n in pairs(keys) do
      if n ~= 0 and tonumber(redis.call('ZINCRBY', bk, n, key)) <= 0 then
        redis.call('ZREM', bk, key)
      end
    end
  end
  tally_topics, tally_keys = {}, {}
end

-- stage(id, topic, due): put a job (its record already 'r') into its key's lane; a lane that
-- was empty joins the turns (looked at once per lane and call)
local lane_seen = {}
local function stage(id, topic, due)
  local key = job_key(id)
  local ln = lane_key(topic, key)
  if redis.call('ZADD', ln, job_rank(id, due), id) == 0 then return false end
  tally(topic, key, 1)
  if not lane_seen[ln] then
    lane_seen[ln] = true
    if redis.call('ZCARD', ln) == 1 and not redis.call('ZSCORE', parked_key(topic), key) then
      lane_to_back(topic, key)
    end
  end
  return true
end

-- lane_left(topic, key): after jobs left a lane: whether it still has some (an empty lane
-- leaves the turns and the parked lanes)
local function lane_left(topic, key)
  if redis.call('EXISTS', lane_key(topic, key)) == 1 then return true end
  redis.call('ZREM', lanes_key(topic), key)
  redis.call('ZREM', parked_key(topic), key)
  lane_seen[lane_key(topic, key)] = nil
  return false
end

-- lane_took(topic, key, n): n jobs left the key's lane, counted at once
local function lane_took(topic, key, n)
  tally(topic, key, -n)
  flush_tally()
  lane_left(topic, key)
end

-- unstage(r, id): take a ready job (state 'r') out of its lane (cancel, reschedule, replace)
local function unstage(r, id)
  local key = job_key(id)
  if redis.call('ZREM', lane_key(r.topic, key), id) == 1 then lane_took(r.topic, key, 1) end
end
