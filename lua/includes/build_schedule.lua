-- build_schedule(s): the record string of a table parse_schedule returned (and changed).
-- @include keys
-- @include parse_schedule
local function build_schedule(s)
  local ahead = {}
  for i, t in ipairs(s.ahead) do ahead[i] = string.format('%d', t) end
  return string.format('%d|%d|%s|%s|', s.next, s.last, s.paused, s.version)
         .. table.concat(ahead, ',') .. '|' .. s.spec
end
