-- flow_keep(): how long this partition keeps the outcome of an ended job (ms; field 'flow' of
-- PREFIX..'meta', docs/workflows.md), 0 on a partition without workflows: one HGET per script
-- run. Apart from includes/flow.lua so that a settle script can ask it without building the
-- workflow helpers (their closures cost every call: docs/benchmarks.md, History 2026-11-26).
-- @include keys
local FLOW_KEEP = nil
local function flow_keep()
  if FLOW_KEEP == nil then
    local v = redis.pcall('HGET', PREFIX .. 'meta', 'flow')
    FLOW_KEEP = type(v) == 'string' and tonumber(v) or 0
  end
  return FLOW_KEEP
end
