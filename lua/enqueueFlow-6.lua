#!lua
-- enqueueFlow-6: add jobs with parents (after=), or jobs others wait for (chains, batch
-- members), idempotent by job id (docs/workflows.md). Plain jobs use enqueueJob/enqueueJobs.
-- KEYS: the six partition keys (includes/keys.lua); touches the workflow keys of includes/flow.lua.
-- ARGV[1] past tolerance ms for absolute due times, ARGV[2] outcome keep ms (written to field
-- 'flow' of PREFIX..'meta' when absent: from then on this partition keeps the outcome of every
-- job that ends, that long), then per job: id, topic, when_kind ('r' | 'a'), when_ms, ttr_ms,
-- max_attempts, blob, policy ('d' dead or 'r' run when a parent did not succeed), opts (the job's
-- options '<priority 0-9>|<expires_ms or empty>|<key or empty>' as enqueueJob takes them, ''
-- for none; docs/keys.md#job-options), token (the job's link token, [0-9a-z-]: its refs in its
-- parents' children sets carry it, docs/workflows.md#runs; '' for none), NP, NP parents
-- '<hint>|<parent id>', NK, NK waiter refs '<partition>|<child id>|<token>' or
-- '<partition>|#<batch>' to add to the job's children. enqueueFlow's ARGV plus the token.
-- A parent's hint: '' (of this partition: looked up here; a job earlier in
-- the call counts as live), 'l' (of another partition, live when the caller linked it), or the
-- outcome the caller found there ('s', 'x', 'c'). A live parent of another partition may have
-- ended since: its outcome is then in PREFIX..'early:'..id under '<parent>|<token>' (a note of
-- another token, another life's link, is not read).
-- Returns one value per job: the due time (a number) when created delayed, '+w' created waiting,
-- '+x' created dead (a parent failed, policy d), else '<state>:<due_ms>' of the job already
-- under the id (nothing written but the refs, which are told at once when it already ended; its
-- parents are not linked: SPEC 3.6, an enqueue of an id that exists changes nothing).
-- Errors: 'SDERR NO_PARENT <id>' (a parent of this partition the queue does not know: nothing
-- written), 'SDERR AT_IN_PAST <id>', 'SDERR BAD_ARGS', 'SDERR WRONG_TYPE <key> <type>'.
-- Retry-safe: a repeat finds the ids and reports them; refs are set members.
-- Options: a new job's field of PREFIX..'opts' is written as enqueueJob writes it (a deadline
-- due + expires for a job created delayed; none yet for a job created waiting, whose expires
-- rides in its deps record and becomes a deadline when it is released, flow_apply; none for a
-- job created dead), and a priority other than 5 or a key flags its topic in PREFIX..'staged'.
-- @include server_time
-- @include keys
-- @include due_after
-- @include resolve_due
-- @include parse_record
-- @include build_record
-- @include new_record
-- @include wake_if_head
-- @include emit_event
-- @include blob_keep
-- @include keep_result
-- @include dead_result
-- @include flow_keep
-- @include flow
-- @include opts_arg

local now, now_us = server_time()
local tolerance, keep = tonumber(ARGV[1]), tonumber(ARGV[2])
if not tolerance or not keep then return redis.error_reply('SDERR BAD_ARGS') end
local jobs, b, any_opts = {}, 3, false
while b <= #ARGV do
  local j = {id = ARGV[b], topic = ARGV[b + 1], kind = ARGV[b + 2], when = tonumber(ARGV[b + 3]),
             ttr = tonumber(ARGV[b + 4]), max = tonumber(ARGV[b + 5]), blob = ARGV[b + 6],
             policy = ARGV[b + 7], opts = ARGV[b + 8], token = ARGV[b + 9], parents = {},
             kids = {}}
  local np = tonumber(ARGV[b + 10])
  if not (j.when and j.ttr and j.max and np and j.opts and j.token) then
    return redis.error_reply('SDERR BAD_ARGS')
  end
  if j.opts ~= '' then
    j.priority, j.expires, j.key = opts_arg(j.opts)
    if not j.priority then return redis.error_reply('SDERR BAD_ARGS') end
    any_opts = true
  end
  b = b + 11
  for k = 0, np - 1 do
    local hint, pid = string.match(ARGV[b + k] or '', '^(%a?)|(.+)$')
    if not pid then return redis.error_reply('SDERR BAD_ARGS') end
    j.parents[#j.parents + 1] = {hint, pid}
  end
  b = b + np
  local nk = tonumber(ARGV[b])
  if not nk then return redis.error_reply('SDERR BAD_ARGS') end
  for k = 1, nk do j.kids[k] = ARGV[b + k] end
  b = b + nk + 1
  if b > #ARGV + 1 then return redis.error_reply('SDERR BAD_ARGS') end
  jobs[#jobs + 1] = j
end
check_partition_keys()
if any_opts then refuse_wrong_type(K_OPTS, 'hash'); refuse_wrong_type(K_STAGED, 'hash') end
-- checked before any write: due times, and every parent of this partition is known
local earlier = {}
for _, j in ipairs(jobs) do
  j.due = resolve_due(j.kind, j.when, now, now_us, tolerance)
  if not j.due then return redis.error_reply('SDERR AT_IN_PAST ' .. j.id) end
  for _, p in ipairs(j.parents) do
    if p[1] == '' then
      p[3] = earlier[p[2]] and 'l' or flow_outcome(p[2], now)
      if not p[3] then return redis.error_reply('SDERR NO_PARENT ' .. p[2]) end
    elseif p[1] == 'l' then
      local field = j.token ~= '' and (p[2] .. '|' .. j.token) or p[2]
      p[3] = redis.call('HGET', PREFIX .. 'early:' .. j.id, field) or 'l'
    else
      p[3] = p[1]
    end
  end
  earlier[j.id] = true
end
redis.call('HSETNX', PREFIX .. 'meta', 'flow', keep)
FLOW_KEEP = nil
local out = {}
for i, j in ipairs(jobs) do
  local raw = redis.call('HGET', K_JOBS, j.id)
  local old = parse_record(raw)
  local ended = nil -- the outcome refs are told at once
  local created_dead = false
  if raw then
    out[i] = string.format('%s:%d', old and old.state or '?', old and old.due or 0)
    if old and old.state == 'x' then ended = 'x' elseif old and old.state == 'c' then ended = 's' end
    -- its parents are not linked (SPEC 3.6): the job under the id keeps the links it made, with
    -- its own token. A repeat of the call that wrote it (its token: a step retried after its
    -- reply was lost) finds nothing to add and answers as that call did, so that the caller
    -- does not unlink what it linked (client/flow_plans.py)
    if j.token ~= '' and old and (redis.call('HGET', PREFIX .. 'deps:' .. j.id, '#') or
        redis.call('HGET', PREFIX .. 'dd:' .. j.id, '#')) == j.token then -- (dd: once dead)
      if old.state == 'w' then out[i] = '+w' elseif old.state == 'x' then out[i] = '+x'
      elseif old.state == 'd' then out[i] = old.due end
    end
  else
    local unmet, failed, failed_o, deps, here = 0, nil, nil, {}, {}
    for _, p in ipairs(j.parents) do
      local state = p[3] == 'l' and 'w' or p[3]
      deps[#deps + 1] = p[2]
      deps[#deps + 1] = state
      if state == 'w' then
        unmet = unmet + 1
        if p[1] == '' then here[#here + 1] = p[2] end
      elseif state ~= 's' and not failed then
        failed, failed_o = p[2], state
      end
    end
    if not (failed and j.policy == 'd') then -- a child created dead waits for none of them
      for _, pid in ipairs(here) do
        redis.call('SADD', PREFIX .. 'children:' .. pid, flow_ref(j.id, j.token))
      end
    end
    local r = {state = 'w', attempts = 0, due = 0, created = due_after(now_us, 0), ttr = j.ttr,
               max = j.max, entry = '', topic = j.topic, blob = j.blob}
    if #deps > 0 then
      if j.token ~= '' then deps[#deps + 1] = '#'; deps[#deps + 1] = j.token end
      deps[#deps + 1] = '~'
      deps[#deps + 1] = j.policy .. '|' .. j.kind .. '|' .. string.format('%d', j.when) .. '|' .. unmet
        .. (j.expires and string.format('|%d', j.expires) or '')
      redis.call('HSET', PREFIX .. 'deps:' .. j.id, unpack(deps))
    end
    if failed and j.policy == 'd' then
      flow_dead(j.id, r, failed, failed_o, now)
      out[i], ended, created_dead = '+x', 'x', true
    elseif unmet > 0 then
      redis.call('HSET', K_JOBS, j.id, build_record(r))
      redis.call('HINCRBY', PREFIX .. 'waiting', j.topic, 1)
      redis.call('ZADD', PREFIX .. 'wjobs', r.created, j.id) -- the listing of waiting jobs
      emit_event('enqueued', j.id, j.topic, 0, 'waiting', now)
      out[i] = '+w'
    else
      flow_write_due(j.id, r, j.due)
      emit_event('enqueued', j.id, j.topic, 0, j.due, now)
      out[i] = j.due
    end
    redis.call('DEL', PREFIX .. 'early:' .. j.id)
    if j.priority then -- its options, as enqueueJob writes them (a deadline once it has a due)
      local deadline = (out[i] == j.due and j.expires) and string.format('%d', j.due + j.expires) or ''
      redis.call('HSET', K_OPTS, j.id, j.priority .. '|' .. deadline .. '|' .. j.key)
      if j.priority ~= 5 or j.key ~= '' then redis.call('HSET', K_STAGED, j.topic, 1) end
    end
  end
  if #j.kids > 0 then
    if ended then
      for _, ref in ipairs(j.kids) do
        local dead = flow_hand(ref, j.id, ended, now)
        if dead then flow_ended(dead, 'x', now) end
      end
    else
      redis.call('SADD', PREFIX .. 'children:' .. j.id, unpack(j.kids))
    end
  end
  if created_dead then flow_ended(j.id, 'x', now) end
end
return out
