#!lua flags=allow-oom
-- joinFleet-3: say that a live process of the queue (a consumer: a worker, or a pull/HTTP
-- consumer) reads the record layouts up to ARGV[2], for the next ARGV[3] ms
-- (docs/keys.md#fleet). `migrate` refuses a layout a live member cannot read.
-- KEYS[1] the queue's fleet hash, partition 0's PREFIX..'fleet': consumer ->
--         '<highest layout it reads>|<live until, epoch ms>'
-- KEYS[2] partition 0's PREFIX..'meta' (read, not written)
-- KEYS[3] partition 0's PREFIX..'workers' (written when ARGV[4] is given)
--         Every key the script touches is declared: on Redis Cluster a slot being migrated
--         answers TRYAGAIN while the three are split between nodes, instead of the script
--         writing a key on the node it left (MIGRATE then refused BUSYKEY and the slot stayed
--         half moved: docs/reliability.md#latest-nemesis-run).
-- ARGV[1] consumer name, ARGV[2] highest layout it reads, ARGV[3] ttl ms (how long the entry
--         counts as live without another call); optional ARGV[4] what the consumer is (JSON:
--         host, pid, running ids, ...) and ARGV[5] how long (ms) that counts as live: written to
--         the workers hash (KEYS[3]) as
--         '<live until ms>|<now ms>|<ARGV[4]>' (docs/operations.md#workers)
-- Flags: allow-oom (one small field per live consumer, and it removes expired ones: a worker
--        must be able to start while Redis is full).
-- Returns the 'layout' field of partition 0's meta hash ('' when absent: layout 1), so a
--         process sees a layout it does not know within one call.
-- Errors: 'SDERR WRONG_TYPE <key> <type>' (checked before any write).
-- Retry-safe: the same field is written again. Bounded: it looks at 16 random fields per call
-- (of each hash) and removes those expired; a hash expires 2 ttl after the last call.
-- @include server_time

local key, meta, workers, member, ttl = KEYS[1], KEYS[2], KEYS[3], ARGV[1], tonumber(ARGV[3])
for _, k in ipairs({key, meta, workers}) do
  local t = redis.call('TYPE', k).ok
  if t ~= 'none' and t ~= 'hash' then error({err = 'SDERR WRONG_TYPE ' .. k .. ' ' .. t}) end
end
local now = server_time()
local seen = redis.call('HRANDFIELD', key, 16, 'WITHVALUES')
for i = 1, #seen, 2 do
  local until_ms = tonumber(string.match(seen[i + 1], '|(%d+)$') or '0')
  if until_ms < now then redis.call('HDEL', key, seen[i]) end
end
redis.call('HSET', key, member, ARGV[2] .. '|' .. (now + ttl))
redis.call('PEXPIRE', key, 2 * ttl)
if ARGV[4] ~= nil and ARGV[4] ~= '' then
  local info_ttl = tonumber(ARGV[5])
  seen = redis.call('HRANDFIELD', workers, 16, 'WITHVALUES')
  for i = 1, #seen, 2 do
    if tonumber(string.match(seen[i + 1], '^(%d+)|') or '0') < now then
      redis.call('HDEL', workers, seen[i])
    end
  end
  redis.call('HSET', workers, member, (now + info_ttl) .. '|' .. now .. '|' .. ARGV[4])
  redis.call('PEXPIRE', workers, 2 * math.max(ttl, info_ttl))
end
return redis.call('HGET', meta, 'layout') or ''
