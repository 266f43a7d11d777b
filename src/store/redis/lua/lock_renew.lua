-- Extend the lock's lease if it still holds our token.
-- KEYS[1] the lock; ARGV[1] our token, ARGV[2] TTL in milliseconds
-- Returns 1 when renewed, 0 when the lock is gone or another's.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
