-- Take the leader lock if nobody holds it, or if the holder is this very
-- node: a node asks only while it does not lead, so a lease in its own name
-- was left by an answer it never got (an acquisition it gave up waiting for,
-- or its renewals that a stalled Redis applied after it had stepped down).
-- Taking it over at once, with a new token, keeps such leftovers from
-- leaving the group leaderless until they expire; anything the old token
-- might still write is fenced out by the new one.
-- KEYS[1] the lock, KEYS[2] the epoch counter
-- ARGV[1] node id, ARGV[2] advertised URL, ARGV[3] TTL in milliseconds,
-- ARGV[4] a random nonce
-- Returns {1, token} when taken, {0, holder's token} when held by another.
-- The token is `epoch|node|nonce|url`. The epoch increases with every
-- acquisition; the nonce keeps tokens unique even if Redis lost the counter.
-- Writes are fenced by the whole token.
local holder = redis.call('GET', KEYS[1])
if holder and string.match(holder, '^[^|]*|([^|]*)|') ~= ARGV[1] then
  return {0, holder}
end
local epoch = redis.call('INCR', KEYS[2])
local token = epoch .. '|' .. ARGV[1] .. '|' .. ARGV[4] .. '|' .. ARGV[2]
redis.call('SET', KEYS[1], token, 'PX', ARGV[3])
return {1, token}
