-- purge_dead_entries(topic, entries, now, out): forget dead-letter entries of topic (XRANGE
-- replies: {entry id, fields}) and their dead jobs, as purgeDead does: the entry goes, and the
-- record when it is still that dead job's (state x, the same entry), with its options and kept
-- parents; a 'purged' event per job (docs/events.md). out collects {id, 'purged <topic>'} pairs
-- for promoteDue's dropped list, which the dispatcher counts as outcome purged
-- (docs/reliability.md#dead-letter-retention).
-- @include keys
-- @include parse_record
-- @include drop_opts
-- @include emit_event
-- @include flow
local function purge_dead_entries(topic, entries, now, out)
  local dk, ended, reason = dead_key(topic), {}, 'purged ' .. topic
  for _, e in ipairs(entries) do
    local eid, f, id = e[1], e[2], nil
    for i = 1, #f, 2 do if f[i] == 'id' then id = f[i + 1] end end
    redis.call('XDEL', dk, eid)
    local r = id and parse_record(redis.call('HGET', K_JOBS, id))
    if r and r.state == 'x' and r.entry == eid then
      redis.call('HDEL', K_JOBS, id); ended[#ended + 1] = id
    end
    if id then
      out[#out + 1] = {id, reason}
      emit_event('purged', id, topic, r and r.attempts or 0, 'retention', now)
    end
  end
  drop_opts(ended)
  flow_forget_dead(ended)
end
