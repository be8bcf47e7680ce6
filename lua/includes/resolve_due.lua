-- resolve_due(kind, ms, now, tolerance): 'r' = ms from now; 'a' = absolute epoch ms, refused
-- (nil) when further in the past than tolerance ms; a past time within tolerance is due at once.
local function resolve_due(kind, ms, now, tolerance)
  if kind == 'r' then return now + ms end
  if ms < now - tolerance then return nil end
  return ms
end
