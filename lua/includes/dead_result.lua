-- dead_result(id, r, why, now, keep, kind, detail): what every dead end writes once job id's
-- record r is in state x, whatever took it there (docs/results.md#keeping-a-result): its result
-- (state x, error why) kept for its envelope's keep_result (blob_keep), or for keep ms when its
-- blob is unknown (a lost stream entry; keep nil: none), its result waiters woken
-- (includes/keep_result.lua), and its event kind ('dead' unless given: 'expired') with detail
-- (why unless given), docs/events.md. Its workflow waiters are told by the caller: end_dead does
-- both; flow_dead (includes/flow.lua) runs inside flow_ended's own worklist.
-- @include keys
-- @include blob_keep
-- @include keep_result
-- @include emit_event
local function dead_result(id, r, why, now, keep, kind, detail)
  local kept = r.blob ~= '' and blob_keep(r.blob) or nil
  keep_result(id, 'x', now, kept or keep, why)
  emit_event(kind or 'dead', id, r.topic, r.attempts, detail or why, now)
end
