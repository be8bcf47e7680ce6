#!lua
-- forwardOutcomes-6: apply outcomes handed over from other partitions' outboxes to the waiters
-- of this partition (docs/workflows.md#across-partitions); called by the dispatchers.
-- KEYS: the six partition keys (includes/keys.lua); touches the workflow keys (includes/flow.lua).
-- ARGV: triples waiter ('<child id>|<link token>', or '#<batch>'), parent id, outcome ('s',
-- 'x', 'c'), applied only to the life of the child with that token (docs/workflows.md#runs);
-- or, from a replayed child that asks again (includes/flow_recheck.lua), waiter ref
-- '<partition>|<child>|<token>', parent id (of this partition), '?': the child is noted as the
-- parent's waiter when the parent is live, else told its outcome (one it no longer knows counts
-- as succeeded); or, from a waiting child that left (a cancel: includes/flow_unlink.lua; a
-- producer whose enqueue found the id taken: client/flow_plans.py), waiter ref, parent id (of
-- this partition), '-': the ref leaves the parent's children set.
-- Returns how many changed a waiter. Idempotent: an outcome already applied changes nothing
-- (the parent's field of the child, the member's field of the batch, is no longer 'w'), so
-- an outbox entry forwarded twice (a dispatcher killed before it dropped it, two dispatchers)
-- counts once.
-- @include server_time
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
-- @include flow

local now = server_time()
if #ARGV % 3 ~= 0 then return redis.error_reply('SDERR BAD_ARGS') end
check_partition_keys()
local changed = 0
-- ask(ref, parent): a replayed child's question (see ARGV)
local function ask(ref, parent)
  local known = flow_outcome(parent, now) or 's'
  if known == 'l' then
    redis.call('SADD', PREFIX .. 'children:' .. parent, ref)
    return nil
  end
  return flow_hand(ref, parent, known, now)
end
for b = 1, #ARGV, 3 do
  local target, parent, o = ARGV[b], ARGV[b + 1], ARGV[b + 2]
  local dead
  if o == '?' then
    dead = ask(target, parent)
  elseif o == '-' then
    redis.call('SREM', PREFIX .. 'children:' .. parent, target)
  else
    local key = string.sub(target, 1, 1) == '#' and PREFIX .. 'bm:' .. string.sub(target, 2)
      or PREFIX .. 'deps:' .. flow_target(target)
    local before = redis.call('HGET', key, parent)
    dead = flow_apply(target, parent, o, now)
    -- (a child of another token keeps its 'w': not counted; a released or dead child's deps go)
    if before == 'w' and redis.call('HGET', key, parent) ~= 'w' then changed = changed + 1 end
  end
  if dead then flow_ended(dead, 'x', now) end
end
return changed
