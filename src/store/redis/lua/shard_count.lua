-- Record the group's shard count, or return the one recorded: an instance
-- started with another count must not touch the data (queues would be
-- looked for in the wrong shards).
-- KEYS[1] the shard count, KEYS[2] and KEYS[3] the queues hash and the
-- epoch counter of the unsharded layout (data written before the count
-- was recorded is unsharded data)
-- ARGV[1] the count this instance runs with
-- Returns the count the data is for.
local stored = redis.call('GET', KEYS[1])
if stored then
  return stored
end
if ARGV[1] ~= '1' and (redis.call('EXISTS', KEYS[2]) == 1 or redis.call('EXISTS', KEYS[3]) == 1) then
  return '1'
end
redis.call('SET', KEYS[1], ARGV[1])
return ARGV[1]
