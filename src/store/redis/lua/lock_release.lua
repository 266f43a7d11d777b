-- Give the lock up if it still holds our token, and tell the passives.
-- KEYS[1] the lock; ARGV[1] our token, ARGV[2] the release channel
-- Returns 1 when released, 0 when it was not ours.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[2], ARGV[1])
  return 1
end
return 0
