-- flow_recheck(id, r, delay, due, parts, now): a child dead-lettered for a failed parent
--  re-checks its parents when it is replayed (docs/workflows.md#dependencies-after); replayDead
--  calls it for a job whose parents flow_dead kept (PREFIX..'dd:'..id, a copy of its deps hash,
--  for DD_MS). r (its record, out of the dead letters by the caller) is looked at against its
--  parents, now: a parent of this partition by what this partition knows (flow_outcome; one it
--  no longer knows, ended more than the outcome keep ago and not dead, holds it back no more);
--  a parent of another partition (parts: the queue's partition count) is asked through the
--  outbox (an entry with outcome '?': forwardOutcomes there notes the child as its waiter, or
--  hands the outcome back). Returns 'x' (a parent of this partition is still dead or
--  cancelled: the child is dead again, a new dead-letter entry, same reason), 'w' (written
--  waiting: due delay ms after its last parent succeeds) or 'd' (every parent succeeded:
--  written delayed, due at due).
--  The replayed child's parents are linked with a new link token, the dead-letter entry id it
--  leaves (docs/workflows.md#runs): a hand-over its earlier life's links still bring is not
--  counted.
-- @include keys
-- @include build_record
-- @include flow
-- @include flow_partition
local function flow_recheck(id, r, delay, due, parts, now)
  local ddk, dk = PREFIX .. 'dd:' .. id, PREFIX .. 'deps:' .. id
  local deps = redis.call('HGETALL', ddk)
  local found, remote, policy = {}, {}, 'd'
  local unmet, failed, failed_o = 0, nil, nil
  for i = 1, #deps, 2 do
    local pid = deps[i]
    if pid == '~' then
      policy = string.sub(deps[i + 1], 1, 1)
    elseif pid ~= '#' then -- (the link token of its earlier life: not a parent)
      local o, here = 'w', flow_partition(pid, parts) == MY_PARTITION
      if here then
        o = flow_outcome(pid, now) or 's'
        if o == 'l' then o = 'w' end
      else
        remote[#remote + 1] = pid
      end
      found[#found + 1] = {pid, o, here}
      if o == 'w' then unmet = unmet + 1
      elseif o ~= 's' and not failed then failed, failed_o = pid, o end
    end
  end
  if failed then -- its parents stay kept (dd:) for a later replay
    redis.call('PEXPIRE', ddk, DD_MS)
    flow_dead(id, r, failed, failed_o, now)
    return 'x'
  end
  redis.call('DEL', ddk)
  if unmet == 0 then
    flow_write_due(id, r, due)
    return 'd'
  end
  local token = r.entry -- the dead-letter entry it leaves: unique to this life of the id
  local ref = flow_ref(id, token)
  local fields = {'~', policy .. '|r|' .. string.format('%d', delay) .. '|' .. unmet, '#', token}
  for _, p in ipairs(found) do
    fields[#fields + 1], fields[#fields + 2] = p[1], p[2]
    if p[2] == 'w' and p[3] then
      redis.call('SADD', PREFIX .. 'children:' .. p[1], ref)
    end
  end
  redis.call('HSET', dk, unpack(fields))
  r.state, r.entry, r.due = 'w', '', 0
  redis.call('HSET', K_JOBS, id, build_record(r))
  redis.call('HINCRBY', PREFIX .. 'waiting', r.topic, 1)
  for _, pid in ipairs(remote) do
    redis.call('XADD', PREFIX .. 'outbox', '*', 'p', flow_partition(pid, parts),
               'r', ref, 'f', pid, 'o', '?')
  end
  return 'w'
end
