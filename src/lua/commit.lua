-- Apply one group commit: the writes of many requests, atomically, if and
-- only if the caller still holds the leader lock.
-- KEYS[1] the lock, KEYS[2] the queues hash, KEYS[3] the sequences hash,
-- KEYS[4..] the message hashes the writes touch.
-- ARGV[1] the caller's lock token, then the writes, each an opcode and its
-- arguments (key arguments are indexes into KEYS):
--   Q name record           queue settings
--   D name bodies states dedup   delete a queue
--   M bodies states seq body state   a new message
--   S states seq state      a message's new state
--   X bodies states seq     a message is gone
--   P bodies states         every message of a queue is gone
--   N name next             next sequence number of a queue
--   U dedup key entry       a FIFO deduplication id to remember
--   V dedup key             a FIFO deduplication id expired
-- Every write sets or removes a whole value, so replaying a batch leaves
-- the same result as applying it once.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return redis.error_reply('FENCED the leader lock holds another token')
end
local i = 2
local n = #ARGV
while i <= n do
  local op = ARGV[i]
  if op == 'M' then
    redis.call('HSET', KEYS[tonumber(ARGV[i + 1])], ARGV[i + 3], ARGV[i + 4])
    redis.call('HSET', KEYS[tonumber(ARGV[i + 2])], ARGV[i + 3], ARGV[i + 5])
    i = i + 6
  elseif op == 'S' then
    redis.call('HSET', KEYS[tonumber(ARGV[i + 1])], ARGV[i + 2], ARGV[i + 3])
    i = i + 4
  elseif op == 'X' then
    redis.call('HDEL', KEYS[tonumber(ARGV[i + 1])], ARGV[i + 3])
    redis.call('HDEL', KEYS[tonumber(ARGV[i + 2])], ARGV[i + 3])
    i = i + 4
  elseif op == 'N' then
    redis.call('HSET', KEYS[3], ARGV[i + 1], ARGV[i + 2])
    i = i + 3
  elseif op == 'Q' then
    redis.call('HSET', KEYS[2], ARGV[i + 1], ARGV[i + 2])
    i = i + 3
  elseif op == 'P' then
    redis.call('UNLINK', KEYS[tonumber(ARGV[i + 1])], KEYS[tonumber(ARGV[i + 2])])
    i = i + 3
  elseif op == 'D' then
    redis.call('HDEL', KEYS[2], ARGV[i + 1])
    redis.call('HDEL', KEYS[3], ARGV[i + 1])
    redis.call('UNLINK', KEYS[tonumber(ARGV[i + 2])], KEYS[tonumber(ARGV[i + 3])], KEYS[tonumber(ARGV[i + 4])])
    i = i + 5
  elseif op == 'U' then
    redis.call('HSET', KEYS[tonumber(ARGV[i + 1])], ARGV[i + 2], ARGV[i + 3])
    i = i + 4
  elseif op == 'V' then
    redis.call('HDEL', KEYS[tonumber(ARGV[i + 1])], ARGV[i + 2])
    i = i + 3
  else
    return redis.error_reply('BADOP unknown write ' .. tostring(op))
  end
end
return n
