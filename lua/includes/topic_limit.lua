-- topic_limit(topic, now, wanted) and topic_limit_took(topic, tl, entries, now): a topic's
-- own rate and concurrency (PREFIX..'limits', docs/limits.md) for a take of a queue of one
-- partition or of partition 0, by takeLimited and takeStaged: the rule itself is
-- includes/limit_check.lua (acquireLimit applies the same one for the other partitions). The
-- check answers limit_check's tl ({k = how many may start, reason = 0 / 1 rate / 2
-- concurrency, wait = ms, ...}); the second takes a token and adds a lease (expiring ttr ms
-- from now) per entry taken. check_topic_limit_keys(topic) refuses a wrong type of the topic's
-- limit keys: call it before any write (and before topic_limit).
-- @include keys
-- @include release_lease
-- @include parse_record
-- @include limit_check
local function check_topic_limit_keys(topic)
  refuse_wrong_type(PREFIX .. 'limits', 'hash'); refuse_wrong_type(PREFIX .. 'bucket:' .. topic, 'hash')
  check_lease_keys(topic)
end
local function topic_limit(topic, now, wanted)
  return limit_check(redis.call('HGET', PREFIX .. 'limits', topic), leases_key(topic),
                     PREFIX .. 'bucket:' .. topic, now, wanted)
end
local function topic_limit_took(topic, tl, entries, now)
  limit_spend(tl, #entries, now)
  if tl.conc then
    for i = 1, #entries do
      local eid, fields = entries[i][1], entries[i][2]
      local ttr = 60000
      for f = 1, #fields, 2 do
        if fields[f] == 'rec' then
          local r = parse_record(fields[f + 1])
          if r then ttr = r.ttr end
        end
      end
      redis.call('ZADD', leases_key(topic), now + ttr, eid)
    end
  end
end
