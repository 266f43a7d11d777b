-- Record a new holder of a lock kept apart from Redis (--lock-url): if its
-- revision is larger than the one recorded, start a new epoch and make its
-- token the one every commit must carry (commit.lua, load_fence.lua), with
-- no TTL: the other lock's lease decides who holds it, this key only fences.
-- KEYS[1] the lock, KEYS[2] the epoch counter, KEYS[3] the recorded revision
-- ARGV[1] the holder's revision, ARGV[2] the rest of its token (node|nonce|url)
-- Returns {1, token} when recorded, {0, recorded token} when a revision as
-- large is recorded already.
local recorded = tonumber(redis.call('GET', KEYS[3]) or '0')
if recorded >= tonumber(ARGV[1]) then
  return {0, redis.call('GET', KEYS[1]) or ''}
end
local epoch = redis.call('INCR', KEYS[2])
local token = epoch .. '|' .. ARGV[2]
redis.call('SET', KEYS[3], ARGV[1])
redis.call('SET', KEYS[1], token)
return {1, token}
