#!lua flags=no-writes
-- readHistory-1: a queue's settled deliveries over a longer window and its totals
-- (docs/dashboard.md#totals), from the history recordLateness writes.
-- KEYS[1] the queue's lateness base, partition 0's PREFIX..'lateness'; reads the derived hashes
--         KEYS[1]..':day:'..<day> and KEYS[1]..':total' (same hash tag).
-- ARGV[1] how many points (1-1440), ARGV[2] minutes per point: a multiple of 60 sums hour
--         fields, any other step minute fields (at most 1440 minutes then); the window ends with
--         the current minute (hour) and spans at most 7 days.
-- Flags: no-writes (read only).
-- Returns [now_ms, total, today, points]: total and today are flat [ok, retried, dead] counts
-- (today: the current UTC day of the server clock), points a flat [ok, retried, dead, ...] list
-- of ARGV[1] points, oldest first (0 where nothing was written).
-- Errors: 'SDERR BAD_ARGS'. Bounded: at most 1440 minutes or 168 hours of 3 HGETs, plus 24 * 3 for today.
-- @include server_time

local points, step = tonumber(ARGV[1]), tonumber(ARGV[2])
if points == nil or step == nil or points < 1 or points > 1440 or step < 1
    or points * step > 7 * 1440 or (step % 60 ~= 0 and points * step > 1440) then
  return redis.error_reply('SDERR BAD_ARGS readHistory')
end
local OUTCOMES = {'ok', 'retried', 'dead'}
local now = server_time()
local minute = math.floor(now / 60000)
local base = KEYS[1]
local function day_hash(m)
  local key = base .. ':day:' .. math.floor(m / 1440)
  if redis.call('TYPE', key).ok == 'hash' then return key end
  return nil
end
local function count(key, field)
  if key == nil then return 0 end
  return tonumber(redis.call('HGET', key, field) or '0') or 0
end
local total = {}
local total_key = base .. ':total'
if redis.call('TYPE', total_key).ok ~= 'hash' then total_key = nil end
for _, o in ipairs(OUTCOMES) do total[#total + 1] = count(total_key, o) end
local today, today_key = {}, day_hash(minute)
local first_hour = math.floor(minute / 1440) * 24
for _, o in ipairs(OUTCOMES) do
  local n = 0
  for h = first_hour, math.floor(minute / 60) do n = n + count(today_key, 'h' .. h .. ':' .. o) end
  today[#today + 1] = n
end
local flat = {}
local hourly = step % 60 == 0
local last = hourly and math.floor(minute / 60) or minute
local unit = hourly and (step / 60) or step
for p = points - 1, 0, -1 do
  local sums = {0, 0, 0}
  for u = last - (p + 1) * unit + 1, last - p * unit do
    local key = day_hash(hourly and u * 60 or u)
    for i, o in ipairs(OUTCOMES) do
      local field = (hourly and 'h' or '') .. u .. ':' .. o
      sums[i] = sums[i] + count(key, field)
    end
  end
  for i = 1, 3 do flat[#flat + 1] = sums[i] end
end
return {now, total, today, flat}
