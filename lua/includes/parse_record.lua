-- parse_record(raw): the job record stored in the jobs hash and copied into streams, as a table
-- (nil when raw is false or malformed); build_record (includes/build_record.lua) writes it back.
-- Layout (text header, then an opaque blob written by the producer):
--   state|attempts|due_ms|created_ms|ttr_ms|max_attempts|entry|topic|blob
-- state: d delayed, s in the topic stream (ready or reserved), x dead, c done (tombstone), r ready
-- in a staged topic's lane (includes/staging.lua; entry empty), w waiting for its parents
-- (includes/flow.lua).
-- entry: the stream entry id while s, the dead-letter entry id while x, empty otherwise.
-- Digits are matched with [0-9], not %d: the same bytes without a C library call per byte.
local function parse_record(raw)
  if not raw then return nil end
  local s, a, d, c, t, m, e, tp, pos = string.match(raw,
    '^([dsxcrw])|([0-9]+)|([0-9]+)|([0-9]+)|([0-9]+)|([0-9]+)|([0-9%-]*)|([^|]+)|()')
  if not s then return nil end
  return {state = s, attempts = tonumber(a), due = tonumber(d), created = tonumber(c),
          ttr = tonumber(t), max = tonumber(m), entry = e, topic = tp, blob = string.sub(raw, pos)}
end
