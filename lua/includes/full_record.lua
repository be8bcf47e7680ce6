-- full_record(r, fields): give r (a parse_record table) its blob when the jobs hash holds only
-- its header. Layout 2 (docs/keys.md#the-job-record): while a job is in its topic stream (state
-- s) promoteDue may write its record without the blob (header-only: the record ends with its
-- 8th '|'; a blob is a non-empty MessagePack array, so an empty one means header-only); the body
-- then lives once, in the stream entry's 'rec' field. fields: that entry's fields when the
-- caller has read them already, else the entry is read (XRANGE). Sets r.header_only when the
-- blob was fetched. Returns true when r holds its blob, false when the entry is gone (trimmed by
-- an operator): the caller makes such a job dead ('stream entry lost', see full_record_lost).
-- @include keys
local STREAM_ENTRY_LOST = 'stream entry lost: the job body was kept only in its stream entry'
local function full_record(r, fields)
  if r.blob ~= '' then return true end
  if r.state ~= 's' then return false end
  if not fields then
    local e = redis.call('XRANGE', stream_key(r.topic), r.entry, r.entry)[1]
    fields = e and e[2]
  end
  local rec = nil
  for i = 1, #(fields or {}), 2 do if fields[i] == 'rec' then rec = fields[i + 1] end end
  local at = rec and string.match(rec, '^[dsxc]|%d+|%d+|%d+|%d+|%d+|[%d%-]*|[^|]+|()')
  if not at or at > #rec then return false end
  r.blob, r.header_only = string.sub(rec, at), true
  return true
end
