-- ack_batch(with_reads): the whole of ackJobsV3 (with_reads false) and ackJobsV4 (true), whose
-- headers give their ARGV; V4's differ only by the N read times after the deliveries.
-- A read time (epoch ms, server clock) says the consumer read that delivery fresh (XREADGROUP
-- '>') at that time and sent no heartbeat for it since: its 'started' event takes that time, with
-- no lookup in the pending list; a delivery without one ('' or 0) is dated from the pending list
-- as in V3 (docs/events.md#started).
-- The script lists every include below before it (the one-level recipe of docs/keys.md) and
-- defines flow_lib() (its lazy workflow helpers), then includes this file.
-- @include server_time
-- @include keys
-- @include release_lease
-- @include read_records
-- @include write_many
-- @include purge_done
-- @include build_record
-- @include parse_record
-- @include hmget_many
-- @include full_record
-- @include keep_result
-- @include wake_if_head
-- @include hold
-- @include emit_event
-- @include emit_started
-- @include drop_opts
-- @include flow_keep
-- @include read_switches

local function ack_batch(with_reads)
  local now = server_time()
  local group, keep = ARGV[1], tonumber(ARGV[2])
  local n = tonumber(ARGV[3]) or 0
  local reads = with_reads and n or 0 -- V4: N read times after the deliveries
  if n < 0 or 3 + 3 * n + reads > #ARGV or (#ARGV - 3 - 3 * n - reads) % 3 ~= 0 then
    error({err = 'SDERR BAD_ARGS ' .. (with_reads and 'ackJobsV4' or 'ackJobsV3') .. ': N does not match the values'})
  end
  local last = 3 + 3 * n -- the last ARGV of the deliveries; (read times, then) results follow
  local results = {} -- delivery position -> {keep ms, result}
  for b = last + reads + 1, #ARGV, 3 do results[tonumber(ARGV[b])] = {tonumber(ARGV[b + 1]), ARGV[b + 2]} end
  local settled = 0
  check_partition_keys()
  local by_topic, topics, ids = {}, {}, {}
  for b = 4, last, 3 do
    local topic = ARGV[b]
    if not by_topic[topic] then
      refuse_wrong_type(stream_key(topic), 'stream')
      check_lease_keys(topic)
      by_topic[topic] = {}
      topics[#topics + 1] = topic
    end
    local eids = by_topic[topic]
    eids[#eids + 1] = ARGV[b + 2]
    if string.byte(ARGV[b + 1], 1) == 123 then eids[ARGV[b + 2]] = ARGV[b + 1] end -- keyed: release_lease
    ids[#ids + 1] = ARGV[b + 1]
  end
  local raws = {}
  local whole = {} -- keep_done: header-only records made whole, read before their entry goes
  if #ids > 0 then
    raws = hmget_many(K_JOBS, ids)
    read_switches() -- events and flow: one HMGET
  end
  if keep > 0 then
    for i = 1, #ids do
      local r = parse_record(raws[i])
      if r and r.state == 's' and r.entry == ARGV[3 * i + 3] and r.blob == '' and full_record(r) then
        whole[i] = raws[i] .. r.blob
      end
    end
  end
  events_batch() -- the call's events share entries (docs/events.md#entries)
  -- events on: each record is parsed here, once (its state, attempts and entry serve 'started',
  -- the loop below and 'succeeded'), and 'started' is dated before XACK drops the pending entries
  local heads = nil -- i -> the attempt that ran (a current delivery), false (a held job's delivery)
  if #ids > 0 and events_on() then
    heads = {}
    local dated = reads > 0 -- every delivery has its read time: no pending list to read
    for i = 1, reads do
      local ms = tonumber(ARGV[last + i])
      if not ms or ms <= 0 then dated = false break end
    end
    if not dated then started_prefetch(group, by_topic) end
    local seen = {}
    local s_ids, s_topics, s_rans, s_ats, ns = {}, {}, {}, {}, 0 -- 'started', written as runs
    for i = 1, #ids do
      local id, raw = ids[i], raws[i]
      if raw and not seen[id] then
        local state, attempts, entry = string.match(raw, '^([dsxc])|(%d+)|%d+|%d+|%d+|%d+|([%d%-]*)|[^|]+|')
        local eid = ARGV[3 * i + 3]
        if state == 's' and entry == eid then
          seen[id] = true -- a job named twice settles once, by its current delivery
          local ran, topic = tonumber(attempts) + 1, ARGV[3 * i + 1]
          heads[i] = ran
          local at = reads > 0 and tonumber(ARGV[last + i]) or 0
          if at <= 0 then at = started_at(group, topic, eid, now) end
          if at then
            ns = ns + 1
            s_ids[ns], s_topics[ns], s_rans[ns], s_ats[ns] = id, topic, ran, at
          end
        elseif state == 'd' and entry == eid then
          heads[i] = false
        end
      end
    end
    events_runs('started', ns, s_ids, s_topics, s_rans, s_ats, nil)
  end
  local STEP = 1000
  for _, topic in ipairs(topics) do
    local sk, eids = stream_key(topic), by_topic[topic]
    for s = 1, #eids, STEP do
      local e = math.min(s + STEP - 1, #eids)
      redis.call('XACK', sk, group, unpack(eids, s, e))
      redis.call('XDEL', sk, unpack(eids, s, e))
    end
    for _, eid in ipairs(eids) do release_lease(topic, eid, eids[eid]) end
  end
  if #ids > 0 then
    local gone, kept, stones, done, ended = {}, {}, {}, {}, {}
    local e_topics, e_rans = {}, {} -- 'succeeded' of the jobs in ended (events on), as runs
    for i = 1, #ids do
      local id, eid = ids[i], ARGV[3 * i + 3]
      -- only the state and the entry are looked at (no copy of the blob); see parse_record
      local state, entry = nil, nil
      if heads then -- parsed above: a number (the attempt that ran) for a current delivery
        local ran = heads[i]
        if ran then state, entry = 's', eid elseif ran == false then state, entry = 'd', eid end
      elseif raws[i] and not done[id] then
        state, entry = string.match(raws[i], '^([dsxc])|%d+|%d+|%d+|%d+|%d+|([%d%-]*)|[^|]+|')
      end
      if state == 's' and entry == eid then
        done[id] = true
        ended[#ended + 1] = id
        if heads then e_topics[#ended], e_rans[#ended] = ARGV[3 * i + 1], heads[i] end
        if keep > 0 then
          local r = parse_record(whole[i] or raws[i])
          r.state, r.entry = 'c', ''
          kept[#kept + 1] = id
          kept[#kept + 1] = build_record(r)
          stones[#stones + 1] = now + keep
          stones[#stones + 1] = id
        else
          gone[#gone + 1] = id
        end
        settled = settled + 1
        local kept_result = results[i]
        if kept_result then keep_result(id, 's', now, kept_result[1], kept_result[2]) end
      elseif state == 'd' and entry == eid then -- its job was rescheduled while it ran: now free
        release_hold(id, eid)
      end
    end
    if heads then events_runs('succeeded', #ended, ended, e_topics, e_rans, now, nil) end
    if #gone > 0 then write_many('HDEL', K_JOBS, gone) end
    drop_opts(ended)
    if #kept > 0 then
      write_many('HSET', K_JOBS, kept)
      write_many('ZADD', K_DONE, stones)
    end
    if #ended > 0 and flow_keep() > 0 then
      local tell_waiters = flow_lib() -- what includes/flow.lua tells a job's waiters with
      for _, id in ipairs(ended) do tell_waiters(id, 's', now) end
    end
  end
  events_flush()
  purge_done(now, n + 100)
  return settled
end
