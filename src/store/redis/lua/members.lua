-- Keep the live members of a sharded group: each instance's heartbeat adds
-- it with an expiry, and members whose expiry passed are dropped. Times are
-- Redis's own clock, so instances' clocks need not agree.
-- KEYS[1] the members sorted set (score: expiry in ms)
-- ARGV[1] node id, ARGV[2] TTL in milliseconds, ARGV[3] 'beat' or 'leave',
-- ARGV[4] the channel on which a change of members is announced
-- Returns the live members' node ids, in order.
local now = redis.call('TIME')
now = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local expired = redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local changed = expired > 0
if ARGV[3] == 'leave' then
  changed = redis.call('ZREM', KEYS[1], ARGV[1]) > 0 or changed
else
  changed = redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1]) > 0 or changed
end
if changed then
  redis.call('PUBLISH', ARGV[4], ARGV[1])
end
return redis.call('ZRANGE', KEYS[1], 0, -1)
