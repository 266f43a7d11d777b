-- Deliver messages from another shard's outbox into this shard's inbox
-- (transfers.rs). It does not check a lock: it changes nothing a leader
-- holds in memory, and repeating it adds nothing, so a deposed leader of the
-- source shard delivering again is harmless.
-- KEYS[1] this shard's queues hash, KEYS[2] its inbox stream, then one
-- arrival marker per message.
-- ARGV[1] how long markers are kept (ms), ARGV[2] the channel that
-- announces arrivals, then per message: its target queue, n, and the n
-- fields and values of its inbox entry.
-- Returns per message: 1 delivered, 0 delivered before (its marker is
-- there), -1 its queue does not exist.
local results = {}
local arrived = false
local i, k = 3, 3
while i <= #ARGV do
  local queue, n = ARGV[i], tonumber(ARGV[i + 1])
  local last = i + 1 + 2 * n
  if redis.call('EXISTS', KEYS[k]) == 1 then
    results[#results + 1] = 0
  elseif redis.call('HEXISTS', KEYS[1], queue) == 0 then
    results[#results + 1] = -1
  else
    redis.call('XADD', KEYS[2], '*', unpack(ARGV, i + 2, last))
    redis.call('SET', KEYS[k], '1', 'PX', ARGV[1])
    results[#results + 1] = 1
    arrived = true
  end
  i = last + 1
  k = k + 1
end
if arrived then
  redis.call('PUBLISH', ARGV[2], '1')
end
return results
