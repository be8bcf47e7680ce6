-- keep_result(id, state, now, keep, payload): when keep (ms) > 0, store the job's result under
-- PREFIX..'r:'..id as 'state|finished_ms|payload' for keep ms (Redis expires it exactly on time:
-- a read never sees it after), and wake its waiters: PREFIX..'w:'..id is set to a one-element
-- list holding the same text, for at most WAKE_MS (a waiter blocks on it with BLMOVE from the
-- list to itself, so one push wakes every waiter; docs/results.md#waiting).
-- state: 's' succeeded (payload: a format letter then the encoded value), 'x' dead (payload: the
-- error), 'c' cancelled (payload: ''). Both keys share the partition's hash tag (one slot).
-- @include keys
local WAKE_MS = 5000
local function keep_result(id, state, now, keep, payload)
  if not keep or keep <= 0 then return end
  local text = state .. '|' .. now .. '|' .. payload
  local wk = PREFIX .. 'w:' .. id
  redis.call('SET', PREFIX .. 'r:' .. id, text, 'PX', keep)
  redis.call('DEL', wk)
  redis.call('LPUSH', wk, text)
  redis.call('PEXPIRE', wk, math.min(keep, WAKE_MS))
end
