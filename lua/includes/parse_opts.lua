-- parse_opts(value) -> priority, deadline_ms, key: a field of K_OPTS ('<priority>|<deadline_ms>|
-- <key>', docs/keys.md#job-options): priority a number, deadline_ms a number or nil (no expiry),
-- key '' for none; nil for a missing or malformed field (a job without options: priority 5).
local function parse_opts(value)
  if not value then return nil end
  local p, d, k = string.match(value, '^([0-9])|(%d*)|(.*)$')
  if not p then return nil end
  return tonumber(p), tonumber(d), k
end
