#!lua flags=allow-oom
-- dropOutbox-6: forget outbox entries once forwarded (docs/workflows.md#across-partitions).
-- KEYS: the six partition keys (includes/keys.lua); touches PREFIX..'outbox'.
-- ARGV: entry ids. Returns how many were still there. Retry-safe.
-- Flags: allow-oom, as it frees memory.
-- @include keys

if #ARGV == 0 then return 0 end
refuse_wrong_type(PREFIX .. 'outbox', 'stream')
return redis.call('XDEL', PREFIX .. 'outbox', unpack(ARGV))
