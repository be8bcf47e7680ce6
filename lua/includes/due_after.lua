-- due_after(now_us, delay_ms): the due time (epoch ms) of a delay counted from now_us, rounded
-- up to the next whole ms, so a job is never due before its full delay has passed.
local function due_after(now_us, delay_ms)
  return math.floor((now_us + delay_ms * 1000 + 999) / 1000)
end
