-- detach(r, id): take job id out of wherever its record r says it is (delayed set, topic stream and
-- the group's pending list, dead-letter stream, tombstones, a staged topic's lane: state 'r',
-- includes/staging.lua; a waiting job's parents: state 'w', includes/flow.lua). The jobs hash is
-- left to the caller.
-- @include keys
-- @include staging
local function detach(r, id)
  if r.state == 'd' then
    if redis.call('ZREM', K_DELAYED, id) == 1 then redis.call('HINCRBY', K_COUNTS, r.topic, -1) end
  elseif r.state == 's' then
    local sk = stream_key(r.topic)
    local group = redis.call('HGET', K_GROUPS, r.topic)
    if group then redis.call('XACK', sk, group, r.entry) end
    redis.call('XDEL', sk, r.entry)
  elseif r.state == 'x' then
    redis.call('XDEL', dead_key(r.topic), r.entry)
  elseif r.state == 'r' then
    unstage(r, id)
  elseif r.state == 'c' then
    redis.call('ZREM', K_DONE, id)
  elseif r.state == 'w' then -- waiting for its parents (includes/flow.lua): their record goes
    redis.call('DEL', PREFIX .. 'deps:' .. id)
    redis.call('HINCRBY', PREFIX .. 'waiting', r.topic, -1)
    redis.call('ZREM', PREFIX .. 'wjobs', id)
  end
end
