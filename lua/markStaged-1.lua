#!lua
-- markStaged-1: flag topics as staged in the queue-wide hash partition 0 keeps (docs/keys.md#job-
-- options), where consumers look for it with limits and pause. A producer sends it in the same
-- round trip before an enqueue of a job with a priority other than 5 or a key on a queue with
-- more than one partition (with one, the enqueue script flags its own partition, which is 0).
-- KEYS[1] partition 0's PREFIX..'staged' (topic -> 1)
-- ARGV: one or more topics
-- Returns the number of topics newly flagged.
-- Errors: 'SDERR WRONG_TYPE <key> <type>' (checked before any write).
-- Retry-safe: a flagged topic stays flagged; a repeat changes nothing.

local key = KEYS[1]
local t = redis.call('TYPE', key).ok
if t ~= 'none' and t ~= 'hash' then error({err = 'SDERR WRONG_TYPE ' .. key .. ' ' .. t}) end
local added = 0
for i = 1, #ARGV do added = added + redis.call('HSETNX', key, ARGV[i], 1) end
return added
