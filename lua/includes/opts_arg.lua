-- opts_arg(value) -> priority, expires_ms, key: the options of one job as an enqueue script takes
-- them, '<priority 0-9>|<expires_ms or empty>|<key or empty>' (expires relative to the due time;
-- docs/keys.md#job-options): priority a number, expires_ms a number or nil, key '' for none;
-- nil when value is malformed.
local function opts_arg(value)
  local p, e, k = string.match(value, '^([0-9])|(%d*)|([A-Za-z0-9_.:@/+=-]*)$')
  if not p or #e > 15 or #k > 64 then return nil end
  return tonumber(p), tonumber(e), k
end
