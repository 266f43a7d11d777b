-- Apply one group commit: the writes of many requests, atomically, if and
-- only if the caller still holds the leader lock and its memory comes from
-- the latest load (see the load fence in docs/redis-layout.md).
-- KEYS[1] the lock, KEYS[2] the load fence, KEYS[3..] the keys the writes touch.
-- ARGV[1] the caller's lock token, ARGV[2] the id of the load its memory
-- came from, then the writes (k is an index into KEYS):
--   H k n field value ...   HSET n fields of KEYS[k]
--   R k n field ...         HDEL n fields of KEYS[k]
--   K k                     UNLINK KEYS[k]
--   X k n field value ...   XADD KEYS[k] * with n fields (an outbox entry)
--   D k n id ...            XDEL n entries of KEYS[k]
-- Every write sets or removes a whole value, so replaying a batch leaves
-- the same result as applying it once; an outbox entry added twice is
-- delivered twice, which its marker makes harmless (transfers.rs).
-- Both checks read with one MGET: each redis.call from a script costs about
-- as much as a small write (loadtest/profile.md).
local held = redis.call('MGET', KEYS[1], KEYS[2])
if held[1] ~= ARGV[1] then
  return redis.error_reply('FENCED the leader lock holds another token')
end
if held[2] ~= ARGV[2] then
  return redis.error_reply('STALE the state was loaded again after these writes were made')
end
local i = 3
local n = #ARGV
while i <= n do
  local op, key = ARGV[i], KEYS[tonumber(ARGV[i + 1])]
  if op == 'H' then
    local last = i + 2 + 2 * tonumber(ARGV[i + 2])
    redis.call('HSET', key, unpack(ARGV, i + 3, last))
    i = last + 1
  elseif op == 'R' then
    local last = i + 2 + tonumber(ARGV[i + 2])
    redis.call('HDEL', key, unpack(ARGV, i + 3, last))
    i = last + 1
  elseif op == 'X' then
    local last = i + 2 + 2 * tonumber(ARGV[i + 2])
    redis.call('XADD', key, '*', unpack(ARGV, i + 3, last))
    i = last + 1
  elseif op == 'D' then
    local last = i + 2 + tonumber(ARGV[i + 2])
    redis.call('XDEL', key, unpack(ARGV, i + 3, last))
    i = last + 1
  elseif op == 'K' then
    redis.call('UNLINK', key)
    i = i + 2
  else
    return redis.error_reply('BADOP unknown write ' .. tostring(op))
  end
end
return n
