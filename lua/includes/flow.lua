-- Workflows (docs/workflows.md): dependencies, chains and batches. Every key shares the
-- partition's hash tag (one slot):
--   PREFIX..'deps:'..child      hash: parent id -> 'w' waiting, 's' succeeded, 'x' dead, 'c'
--                               cancelled; field '~' -> 'policy|when_kind|when_ms|unmet[|expires_ms]'
--                               (policy 'd' dead on a failed parent, 'r' run once all ended;
--                               expires_ms: the job's expiry, docs/expiry.md, made its deadline in
--                               PREFIX..'opts' when it is released: due + expires_ms); field '#'
--                               -> the child's link token (below)
--   PREFIX..'children:'..parent set of waiter refs '<partition>|<child id>|<token>' or
--                               '<partition>|#<batch>'
--   PREFIX..'o:'..id            string '<s|x|c>|<ended ms>': the outcome of an ended job, kept the
--                               ms in field 'flow' of PREFIX..'meta' (absent: workflows off here)
--   PREFIX..'early:'..child     hash '<parent>|<token>' -> outcome: an outcome handed over before
--                               its child was written (expires after a day)
--   PREFIX..'waiting'           hash topic -> jobs in state 'w'
--   PREFIX..'wjobs'             sorted set: the jobs in state 'w' -> created ms (listing)
--   PREFIX..'batch:'..B         hash total, ok, bad, closed, fired, created, ended, cb1, cb2
--   PREFIX..'bm:'..B            hash member id -> 'w' | 's' | 'x' | 'c'
--   PREFIX..'outbox'            stream of hand-overs to another partition: p (partition), r (ref),
--                               f (parent id), o (outcome); forwarded by the dispatchers
-- Link tokens (docs/workflows.md#runs): each life of a child id links to its parents with a
-- token of its own (the producer's, per enqueue call; a replay's: its dead-letter entry id),
-- kept in its deps hash and carried by its refs, so by every hand-over, outbox entry and early
-- note. A hand-over counts only for the child whose token it carries: one a children set still
-- held for an earlier life of the id (cancelled, dead, purged) changes nothing. A ref without a
-- token is trusted as before.
-- A waiting job's record is 'w|0|0|created|ttr|max||topic|blob' (includes/parse_record.lua).
-- @include keys
-- @include parse_record
-- @include build_record
-- @include new_record
-- @include wake_if_head
-- @include emit_event
-- @include blob_keep
-- @include keep_result
-- @include dead_result
-- @include flow_keep
local MY_PARTITION = string.match(PREFIX, '#(%d+)}:$')
local EARLY_MS = 86400000

-- flow_due(kind, when, now): a released job's due time: its delay counted from now, or its at.
local function flow_due(kind, when, now)
  if kind == 'r' then return now + when end
  return when
end

-- flow_write_due(id, r, due): write r as a delayed job due at due.
local function flow_write_due(id, r, due)
  r.state, r.entry, r.due = 'd', '', due
  redis.call('HSET', K_JOBS, id, build_record(r))
  redis.call('ZADD', K_DELAYED, due, id)
  redis.call('HINCRBY', K_COUNTS, r.topic, 1)
  wake_if_head(id, due)
end

-- flow_dead(id, r, parent, o, now): a waiting job whose parent did not succeed goes dead, its
-- result kept and its result waiters woken, its 'dead' event written (includes/dead_result.lua;
-- its workflow waiters are told by the caller's flow_ended). Its parents are kept (its deps
-- hash copied to 'dd:'..id, for DD_MS; copied, not RENAMEd: the documented ACL,
-- docs/security.md) so that a replay re-checks them (includes/flow_recheck.lua); they go when
-- the job leaves the dead letters otherwise (flow_forget_dead).
local DD_MS = 30 * 86400000
-- flow_forget_dead(ids): the kept parents of dead jobs ids go (a reschedule, purge or cancel:
-- the job left the dead letters other than by a replay, and a later life of the id must not be
-- re-checked against them; and any other dead end, includes/end_dead.lua, for a later life
-- after a replace). Nothing on a partition without workflows; else one DEL per 500.
local function flow_forget_dead(ids)
  if #ids == 0 or flow_keep() <= 0 then return end
  local ks = {}
  for i, id in ipairs(ids) do
    ks[#ks + 1] = PREFIX .. 'dd:' .. id
    if #ks == 500 or i == #ids then redis.call('DEL', unpack(ks)); ks = {} end
  end
end
local function flow_dead(id, r, parent, o, now)
  local deps = redis.call('HGETALL', PREFIX .. 'deps:' .. id)
  if #deps > 0 then -- (none when a replay's re-check calls it: the kept ones stay)
    local ddk = PREFIX .. 'dd:' .. id
    redis.call('DEL', ddk) -- an earlier life's, left by a replace
    redis.call('HSET', ddk, unpack(deps))
    redis.call('PEXPIRE', ddk, DD_MS)
  end
  local why = 'parent failed: ' .. parent .. (o == 'c' and ' (cancelled)' or '')
  r.entry = redis.call('XADD', dead_key(r.topic), '*', 'id', id, 'error', why, 'attempts', 0,
                       'at', now)
  r.state = 'x'
  redis.call('HSET', K_JOBS, id, build_record(r))
  dead_result(id, r, why, now, nil)
end

-- flow_callback(id, spec, now): write a batch callback, an ordinary job; nothing when its id
-- is taken (it was written already: exactly once). spec 'kind|when|ttr|max|topic|blob', after
-- 'o<priority>|<expires_ms>|<key>|' for a callback with options: its field of K_OPTS is
-- written as enqueueJob writes it (a deadline: due + expires_ms), and a priority other than
-- 5 or a key flags its topic staged (partition 0's flag: set by the batch's opening call).
local function flow_callback(id, spec, now)
  if redis.call('HEXISTS', K_JOBS, id) == 1 then return end
  local p, e, k, rest = string.match(spec, '^o(%d)|(%d*)|([^|]*)|()')
  if p then spec = string.sub(spec, rest) end
  local kind, when, ttr, max, at = string.match(spec, '^(%a)|(%d+)|(%d+)|(%d+)|()')
  local topic, blob = string.match(string.sub(spec, at), '^([^|]+)|(.*)$')
  local due = flow_due(kind, tonumber(when), now)
  redis.call('HSET', K_JOBS, id, new_record(due, now, tonumber(ttr), tonumber(max), topic, blob))
  if p then
    local deadline = e ~= '' and string.format('%d', due + tonumber(e)) or ''
    redis.call('HSET', K_OPTS, id, p .. '|' .. deadline .. '|' .. k)
    if p ~= '5' or k ~= '' then redis.call('HSET', K_STAGED, topic, 1) end
  end
  redis.call('ZADD', K_DELAYED, due, id)
  redis.call('HINCRBY', K_COUNTS, topic, 1)
  wake_if_head(id, due)
  emit_event('enqueued', id, topic, 0, due .. ' callback', now)
end

-- batch_fire(B, now): once a closed batch has no member left, its callbacks, once.
local function batch_fire(b, now)
  local bk = PREFIX .. 'batch:' .. b
  local f = redis.call('HMGET', bk, 'total', 'ok', 'bad', 'closed', 'fired', 'cb1', 'cb2')
  if f[4] ~= '1' or f[5] == '1' then return end
  local ok, bad = tonumber(f[2]) or 0, tonumber(f[3]) or 0
  if ok + bad < (tonumber(f[1]) or 0) then return end
  redis.call('HSET', bk, 'fired', '1', 'ended', now)
  if f[6] and f[6] ~= '' and bad == 0 then flow_callback(b .. '@1', f[6], now) end
  if f[7] and f[7] ~= '' then flow_callback(b .. '@2', f[7], now) end
end

-- flow_ref(id, token): the waiter ref of child id of this partition with its link token.
local function flow_ref(id, token)
  if token and token ~= '' then return MY_PARTITION .. '|' .. id .. '|' .. token end
  return MY_PARTITION .. '|' .. id
end

-- flow_target(target): a waiter target's child id and link token ('<child>|<token>'; nil for
-- '<child>' without one and for '#<batch>').
local function flow_target(target)
  local id, token = string.match(target, '^([^|]+)|([%w%-]+)$')
  if id then return id, token end
  return target, nil
end

-- flow_apply(target, parent, o, now): parent ended with outcome o; target is a child of this
-- partition ('<child id>|<token>') or '#<batch>'. Idempotent: a parent already counted, a child
-- no longer waiting, a child of another token (another life of the id: docs/workflows.md#runs)
-- or an unknown batch change nothing. Returns the child's id when it went dead.
local function flow_apply(target, parent, o, now)
  if string.sub(target, 1, 1) == '#' then
    local b = string.sub(target, 2)
    local mk = PREFIX .. 'bm:' .. b
    if redis.call('HGET', mk, parent) ~= 'w' then return nil end
    redis.call('HSET', mk, parent, o)
    redis.call('HINCRBY', PREFIX .. 'batch:' .. b, o == 's' and 'ok' or 'bad', 1)
    batch_fire(b, now)
    return nil
  end
  local token
  target, token = flow_target(target)
  local raw = redis.call('HGET', K_JOBS, target)
  if not raw then -- not written yet (another partition's enqueue still to come): noted, for
    -- the life of the id that linked with this token only
    local ek = PREFIX .. 'early:' .. target
    redis.call('HSET', ek, token and (parent .. '|' .. token) or parent, o)
    redis.call('PEXPIRE', ek, EARLY_MS)
    return nil
  end
  local dk = PREFIX .. 'deps:' .. target
  local seen = redis.call('HMGET', dk, parent, '#')
  if seen[1] ~= 'w' then return nil end
  if token and seen[2] ~= token then return nil end -- another life's link
  local r = parse_record(raw)
  if not r or r.state ~= 'w' then return nil end
  redis.call('HSET', dk, parent, o)
  local policy, kind, when, unmet, expires = string.match(redis.call('HGET', dk, '~') or '',
                                                          '^(%a)|(%a)|(%d+)|(%d+)(|?%d*)$')
  if not policy then return nil end
  unmet = tonumber(unmet) - 1
  redis.call('HSET', dk, '~', policy .. '|' .. kind .. '|' .. when .. '|' .. unmet .. expires)
  if o ~= 's' and policy == 'd' then
    redis.call('HINCRBY', PREFIX .. 'waiting', r.topic, -1)
    redis.call('ZREM', PREFIX .. 'wjobs', target)
    flow_dead(target, r, parent, o, now)
    return target
  end
  if unmet <= 0 then
    redis.call('HINCRBY', PREFIX .. 'waiting', r.topic, -1)
    redis.call('ZREM', PREFIX .. 'wjobs', target)
    flow_write_due(target, r, flow_due(kind, tonumber(when), now))
    if expires ~= '' then -- its deadline counts from the due time it has now (docs/workflows.md)
      local p, key = string.match(redis.call('HGET', K_OPTS, target) or '5||', '^(%d)|%d*|(.*)$')
      redis.call('HSET', K_OPTS, target, (p or '5') .. '|' ..
                 string.format('%d', r.due + tonumber(string.sub(expires, 2))) .. '|' .. (key or ''))
    end
    emit_event('enqueued', target, r.topic, 0, r.due .. ' released', now)
  end
  return nil
end

-- flow_hand(ref, parent, o, now): tell waiter ref (its partition and target) that parent
-- ended: applied here when it lives in this partition (returns a child that went dead), else
-- written to the outbox for the dispatchers to forward.
local function flow_hand(ref, parent, o, now)
  local p, target = string.match(ref, '^(%d+)|(.+)$')
  if not p then return nil end
  if p == MY_PARTITION then return flow_apply(target, parent, o, now) end
  redis.call('XADD', PREFIX .. 'outbox', '*', 'p', p, 'r', target, 'f', parent, 'o', o)
  return nil
end

-- flow_ended(id, o, now): job id ended with outcome o ('s', 'x', 'c'): keep its outcome and
-- hand it to its waiters; a child that goes dead hands on in turn (a worklist, not recursion).
-- A no-op on a partition without workflows (one HGET per script run).
local function flow_ended(id, o, now)
  if flow_keep() <= 0 then return end
  local work, i = {{id, o}}, 1
  while i <= #work do
    local pid, po = work[i][1], work[i][2]
    i = i + 1
    redis.call('SET', PREFIX .. 'o:' .. pid, po .. '|' .. now, 'PX', flow_keep())
    redis.call('DEL', PREFIX .. 'deps:' .. pid)
    local ck = PREFIX .. 'children:' .. pid
    local refs = redis.call('SMEMBERS', ck)
    if #refs > 0 then
      redis.call('DEL', ck)
      for _, ref in ipairs(refs) do
        local dead = flow_hand(ref, pid, po, now)
        if dead then work[#work + 1] = {dead, 'x'} end
      end
    end
  end
end

-- flow_outcome(id, now): what this partition knows of job id: 'l' live (delayed, in its
-- stream, waiting), 's' / 'x' / 'c' ended so, or nil (unknown).
local function flow_outcome(id, now)
  local raw = redis.call('HGET', K_JOBS, id)
  if raw then
    local st = string.sub(raw, 1, 1)
    if st == 'x' then return 'x' end
    if st == 'c' then return 's' end
    return 'l'
  end
  local o = redis.call('GET', PREFIX .. 'o:' .. id)
  if o then return string.sub(o, 1, 1) end
  local r = redis.pcall('GET', PREFIX .. 'r:' .. id)
  if type(r) == 'string' then return string.sub(r, 1, 1) end
  return nil
end
