-- build_record(r): the record string of a table parse_record gives (the layout is in
-- includes/parse_record.lua).
local function build_record(r)
  return table.concat({r.state, string.format('%d', r.attempts), string.format('%d', r.due),
    string.format('%d', r.created), string.format('%d', r.ttr), string.format('%d', r.max),
    r.entry, r.topic, r.blob}, '|')
end
