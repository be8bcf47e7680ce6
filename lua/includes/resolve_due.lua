-- resolve_due(kind, ms, now, now_us, tolerance): 'r' = ms from now_us (µs), rounded up to the
-- next ms (due_after, includes/server_time.lua); 'a' = absolute epoch ms, refused (nil) when
-- further in the past than tolerance ms; a past time within tolerance is due at once.
-- @include due_after
local function resolve_due(kind, ms, now, now_us, tolerance)
  if kind == 'r' then return due_after(now_us, ms) end
  if ms < now - tolerance then return nil end
  return ms
end
