-- new_record(due, created, ttr, max, topic, blob): the record of a job just enqueued (state d, no
-- attempts, no entry): the string build_record gives for those values, built in one go (a
-- separate concat for topic and blob: string.format's %s stops at a NUL byte in short strings).
local function new_record(due, created, ttr, max, topic, blob)
  return string.format('d|0|%d|%d|%d|%d||', due, created, ttr, max) .. topic .. '|' .. blob
end
