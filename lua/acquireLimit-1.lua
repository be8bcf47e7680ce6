#!lua
-- acquireLimit-1: the first step of a take of a limited topic on a partition p other than 0
-- (docs/limits.md#more-than-one-partition): take up to `wanted` tokens of the rate limit and
-- leases of the concurrency limit in partition 0's slot, where the topic's limit state lives,
-- never more than the limit lets start now. The caller then reads at most that many entries of
-- partition p (takeGranted) and names or hands back the leases (nameLeases).
-- KEYS[1] the queue's limits hash sd:{Q#0}:limits (the other keys: includes/limit_state.lua)
-- ARGV[1] topic, ARGV[2] wanted (>= 1), ARGV[3] grant id (unique per take: chosen by the
-- caller, [A-Za-z0-9_.:-]), ARGV[4] hold ms (>= 1): how long the leases stay unnamed at most
-- Returns {granted, reason, wait_ms, leased}: granted 0..wanted entries may be taken; reason 0
-- got all wanted, 1 the rate holds back (wait_ms: until the next token), 2 the concurrency
-- holds back (wait_ms: until the earliest lease expires; a freed lease pushes onto limitwake);
-- leased 1 when the topic has a concurrency limit (the taken entries hold leases: every settle
-- frees them with freeLeases). A topic without a limit grants all it is asked. The limit's rule
-- is includes/limit_check.lua, the one takeLimited and takeStaged apply on partition 0.
-- Writes: the bucket (tokens taken), `granted` leases '~<grant>:<i>' expiring after hold ms
-- (a concurrency limit), and the grant key '<granted>|<tokens taken 0/1>' (PX hold ms).
-- Errors: 'SDERR WRONG_TYPE <key> <type>' (checked before any write), 'SDERR BAD_ARGS'.
-- Retry-safe: a call whose grant id was already granted answers that grant, writes nothing.
-- @include server_time
-- @include limit_check
-- @include limit_state

local topic, wanted, grant, hold = ARGV[1], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
if not wanted or wanted < 1 or not hold or hold < 1 or not grant or grant == '' then
  return redis.error_reply('SDERR BAD_ARGS')
end
check_limit_keys(topic); check_limit_type(grant_key(grant), 'string')
local spec = redis.call('HGET', KEYS[1], topic)
local _, _, conc = limit_spec(spec)
local leased = conc and 1 or 0
local done = redis.call('GET', grant_key(grant))
if done then return {tonumber(string.match(done, '^(%d+)')) or 0, 0, 0, leased} end

local now = server_time()
local tl = limit_check(spec, lease_zset(topic), lease_bucket(topic), now, wanted)
local k = tl.k
if k <= 0 then return {0, tl.reason, tl.wait, leased} end
limit_spend(tl, k, now)
if tl.conc then
  for i = 1, k do redis.call('ZADD', lease_zset(topic), now + hold, '~' .. grant .. ':' .. i) end
end
redis.call('SET', grant_key(grant), k .. '|' .. (tl.tokens and 1 or 0), 'PX', hold)
return {k, tl.reason, tl.wait, leased}
