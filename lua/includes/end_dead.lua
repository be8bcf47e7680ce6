-- end_dead(id, r, why, now, keep, kind, detail): job id ends dead with error why the way every
-- settle script ends a job (failJob), whatever took it there (a last attempt, a lost stream
-- entry, a deadline, a topic key that holds no stream): a dead-letter entry (id, error,
-- attempts, at), its record in state x, its result kept and its waiters woken, its event
-- (includes/dead_result.lua: keep, kind, detail), and its workflow waiters told in the same
-- script (flow_ended, docs/workflows.md), at once or, after defer_dead_flow(), when the caller
-- calls flush_dead_flow(now) (promoteDue, whose delayed-set removal by rank must come before
-- any released child is added to that set). The caller has taken r out of its place (delayed
-- set, stream entry). Returns the dead-letter entry id, or false and the error when the XADD
-- failed (a foreign value at the dead-letter key: nothing written).
-- @include keys
-- @include build_record
-- @include dead_result
-- @include flow
local dead_deferred = nil -- defer_dead_flow(): ids whose waiters flush_dead_flow tells
local function end_dead(id, r, why, now, keep, kind, detail)
  local dead = redis.pcall('XADD', dead_key(r.topic), '*', 'id', id, 'error', why,
                           'attempts', r.attempts, 'at', now)
  if type(dead) ~= 'string' then return false, dead end
  r.state, r.entry = 'x', dead
  redis.call('HSET', K_JOBS, id, build_record(r))
  dead_result(id, r, why, now, keep, kind, detail)
  redis.pcall('HDEL', PREFIX .. 'ck', id) -- its checkpoint ends with it (docs/keys.md#checkpoints)
  flow_forget_dead({id}) -- not dead for a parent: a replay must not re-check an earlier life's
  if dead_deferred then dead_deferred[#dead_deferred + 1] = id else flow_ended(id, 'x', now) end
  return dead
end
local function defer_dead_flow() dead_deferred = {} end
local function flush_dead_flow(now)
  local ids = dead_deferred or {}
  dead_deferred = nil
  for _, id in ipairs(ids) do flow_ended(id, 'x', now) end
end
