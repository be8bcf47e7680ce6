-- end_dead(id, r, why, now, keep): job id ends dead with error why the way every settle script
-- ends a job (failJobV3): a dead-letter entry (id, error, attempts, at), its record in state x,
-- its result kept (docs/results.md) for the envelope's keep_result, or for keep ms when its blob
-- is unknown (a lost stream entry; keep nil: none), its result waiters woken, the 'dead' event
-- (docs/events.md), and its workflow waiters told in the same script (flow_ended,
-- docs/workflows.md). The caller has taken r out of its place (delayed set, stream entry).
-- Returns the dead-letter entry id.
-- @include keys
-- @include build_record
-- @include blob_keep
-- @include keep_result
-- @include emit_event
-- @include flow
local function end_dead(id, r, why, now, keep)
  r.entry = redis.call('XADD', dead_key(r.topic), '*', 'id', id, 'error', why,
                       'attempts', r.attempts, 'at', now)
  r.state = 'x'
  redis.call('HSET', K_JOBS, id, build_record(r))
  local kept = r.blob ~= '' and blob_keep(r.blob) or nil
  keep_result(id, 'x', now, kept or keep, why)
  emit_event('dead', id, r.topic, r.attempts, why, now)
  flow_ended(id, 'x', now)
  return r.entry
end
