-- Begin a load of the state: its id becomes the one every commit must name
-- (commit.lua), if the caller still holds the leader lock. A commit made on
-- the memory of an earlier load, arriving after this, is refused.
-- KEYS[1] the lock, KEYS[2] the load fence; ARGV[1] the caller's token,
-- ARGV[2] the new load's id.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return redis.error_reply('FENCED the leader lock holds another token')
end
redis.call('SET', KEYS[2], ARGV[2])
return 1
