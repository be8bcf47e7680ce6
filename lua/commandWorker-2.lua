#!lua flags=allow-oom
-- commandWorker-2: tell one live worker process to quiet (take no new jobs, finish its running
-- ones) or to stop gracefully (docs/operations.md#quiet-and-stop). The worker reads its field
-- with the pause watch (every 0.5 s): no round trip per job.
-- KEYS[1] the queue's workers hash, partition 0's PREFIX..'workers' (joinFleet writes it:
--         consumer -> '<live until ms>|<renewed ms>|<JSON>'), read
-- KEYS[2] partition 0's PREFIX..'commands', written: consumer ->
--         '<quiet|stop>|<the process's started ms>|<until ms>' (declared, as every key a
--         script writes: a Cluster slot migration must see it; lua/joinFleet-3.lua)
-- ARGV[1] worker (consumer) name, ARGV[2] 'quiet' or 'stop', ARGV[3] how long (ms) the command
--         is kept for the worker to read it.
-- Flags: allow-oom (an operator must be able to quiet or stop a worker while Redis is full).
-- Returns 1 when this call changed the command, 0 when it already was so (or a stop is
--         already asked: a quiet does not undo it), -1 when no live consumer has that name,
--         -2 when it is a pull/HTTP consumer (no process of its own to command).
-- Errors: 'SDERR WRONG_TYPE <key> <type>' (checked before any write).
-- Retry-safe: the same field is written again. Bounded: one field per worker commanded within
-- ARGV[3]; each call removes expired ones among 16 it samples; the hash expires 2 ARGV[3]
-- after the last call. The process's started ms ties the command to that process: a later
-- process of the same name does not obey it.
-- @include server_time

local key, commands, member, verb, ttl = KEYS[1], KEYS[2], ARGV[1], ARGV[2], tonumber(ARGV[3])
for _, k in ipairs({key, commands}) do
  local t = redis.call('TYPE', k).ok
  if t ~= 'none' and t ~= 'hash' then error({err = 'SDERR WRONG_TYPE ' .. k .. ' ' .. t}) end
end
local now = server_time()
local entry = redis.call('HGET', key, member)
if not entry or tonumber(string.match(entry, '^(%d+)|') or '0') < now then return -1 end
if string.find(entry, '"kind":"worker"', 1, true) == nil then return -2 end
local started = string.match(entry, '"started":(%d+)') or '0'
local seen = redis.call('HRANDFIELD', commands, 16, 'WITHVALUES')
for i = 1, #seen, 2 do
  if tonumber(string.match(seen[i + 1], '|(%d+)$') or '0') < now then
    redis.call('HDEL', commands, seen[i])
  end
end
local old = redis.call('HGET', commands, member)
local old_verb, old_started = string.match(old or '', '^(%a+)|(%d+)|')
local changed = 1
if old_started == started and (old_verb == verb or old_verb == 'stop') then
  changed = 0
  verb = old_verb
end
redis.call('HSET', commands, member, verb .. '|' .. started .. '|' .. (now + ttl))
redis.call('PEXPIRE', commands, 2 * ttl)
return changed
