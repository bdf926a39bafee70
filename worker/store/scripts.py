"""The Lua scripts of :class:`sca_worker.store.Store`: each runs atomically in Redis.

Every script reads its keys from ``KEYS`` except :data:`CENSUS_STEP`, which
reads the keys a ``SCAN`` step returns, and :data:`RELEASE`, which deletes the
chunks named after an artifact's key: one Redis, not a cluster.
"""

# Sets hash fields if the hash exists and (when given) its status is expected.
# KEYS[1] hash; ARGV: ttl, n_expected, expected..., field, value, field, value...
HSET_IF = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local n = tonumber(ARGV[2])
if n > 0 then
  local status = redis.call('HGET', KEYS[1], 'status')
  local ok = false
  for i = 3, 2 + n do if status == ARGV[i] then ok = true end end
  if not ok then return 0 end
end
for i = 3 + n, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
redis.call('EXPIRE', KEYS[1], ARGV[1])
return 1
"""

# Sets a job's fields as HSET_IF does, and in the same call: marks the job alive
# (a sorted set's member scored now), adds 1 to a counter field unless a field
# already held its new value, appends an event to the job's stream (when a
# counter is given, only when it reached 1) and reads the job back.  KEYS[1] job
# hash, KEYS[2] sorted set of live jobs ('' = none), KEYS[3] the job's event
# stream ('' = none); ARGV: ttl, now, member, counter ('' = none), field
# compared, event name, event data, events kept, n_expected, expected..., field,
# value, field, value...  Returns false when nothing was set, else {counter's
# value or 0, HGETALL}.
HSET_GET = """
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local n = tonumber(ARGV[9])
if n > 0 then
  local status = redis.call('HGET', KEYS[1], 'status')
  local ok = false
  for i = 10, 9 + n do if status == ARGV[i] then ok = true end end
  if not ok then return false end
end
local count, same = 0, false
for i = 10 + n, #ARGV, 2 do
  if ARGV[i] == ARGV[5] and redis.call('HGET', KEYS[1], ARGV[i]) == ARGV[i + 1] then
    same = true
  end
  redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
end
redis.call('EXPIRE', KEYS[1], ARGV[1])
if KEYS[2] ~= '' then redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3]) end
if ARGV[4] ~= '' and not same then count = redis.call('HINCRBY', KEYS[1], ARGV[4], 1) end
if KEYS[3] ~= '' and (ARGV[4] == '' or count == 1) then
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[8], '*', 'e', ARGV[6], 'd', ARGV[7])
  redis.call('EXPIRE', KEYS[3], ARGV[1])
end
return {count, redis.call('HGETALL', KEYS[1])}
"""

# Adds to a job's counter field if the job exists, adds an observation to a
# histogram's hash, appends an event to the job's stream while the job's status
# is the one given, and reads the job back (false when it is gone).  KEYS[1] job
# hash, KEYS[2] histogram hash, KEYS[3] the job's event stream ('' = none);
# ARGV: field, amount, ttl, event name, event data, events kept, status, then
# the histogram's field, amount, "int" or "float" triples.
HINCR_GET = """
for i = 8, #ARGV, 3 do
  if ARGV[i + 2] == 'int' then redis.call('HINCRBY', KEYS[2], ARGV[i], ARGV[i + 1])
  else redis.call('HINCRBYFLOAT', KEYS[2], ARGV[i], ARGV[i + 1]) end
end
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
redis.call('HINCRBYFLOAT', KEYS[1], ARGV[1], ARGV[2])
if KEYS[3] ~= '' and redis.call('HGET', KEYS[1], 'status') == ARGV[7] then
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[6], '*', 'e', ARGV[4], 'd', ARGV[5])
  redis.call('EXPIRE', KEYS[3], ARGV[3])
end
return redis.call('HGETALL', KEYS[1])
"""

# Adds to a hash field if the hash exists (a deleted job is not re-created).
# KEYS[1] hash; ARGV: field, amount, "int" or "float".  Returns the new value as text.
HINCR_IF = """
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
if ARGV[3] == 'int' then
  return tostring(redis.call('HINCRBY', KEYS[1], ARGV[1], ARGV[2]))
end
return redis.call('HINCRBYFLOAT', KEYS[1], ARGV[1], ARGV[2])
"""

# KEYS[1]; ARGV: expected, new value, ttl.
SWAP = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3]) return 1
end
return 0
"""

# KEYS[1]; ARGV: expected.
DELETE_IF = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""

# KEYS[1] sorted set, KEYS[2] its removed members (sorted set, same scores);
# ARGV: member to page after ('' = from the newest), count.  A removed member
# still marks its place: the page starts below its score (among equal scores,
# which ZREVRANGE orders by name descending, after the names above it).
PAGE = """
local start = 0
if ARGV[1] ~= '' then
  local rank = redis.call('ZREVRANK', KEYS[1], ARGV[1])
  if rank then
    start = rank + 1
  else
    local score = redis.call('ZSCORE', KEYS[2], ARGV[1])
    if not score then return false end
    start = redis.call('ZCOUNT', KEYS[1], '(' .. score, '+inf')
    for _, member in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], score, score)) do
      if member > ARGV[1] then start = start + 1 end
    end
  end
end
return redis.call('ZREVRANGE', KEYS[1], start, start + tonumber(ARGV[2]) - 1)
"""

# Moves a member of a sorted set to the set of its removed members, at its score,
# and drops the removed members scored below a bound.  The removal comes first:
# a full Redis refuses a script's first write only if it would add memory.
# KEYS[1] sorted set, KEYS[2] its removed members; ARGV: member, lowest score kept, ttl.
UNLIST = """
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.pcall('ZADD', KEYS[2], score, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[2])
redis.call('EXPIRE', KEYS[2], ARGV[3])
return 1
"""

# Drops a job's references to the artifacts kept under some content hashes, and
# deletes (with their chunks) the artifacts of each hash no reference is left on:
# constant work per job, whatever the number of jobs sharing them.  Only removals
# and reads, so a full Redis runs it too.  References scored below a bound are of
# jobs expired meanwhile (never released) and are dropped.
# KEYS: per hash, its references (sorted set) then its artifacts; ARGV: job id,
# lowest score kept, the head of a chunked value, the infix of its chunks' names,
# then per hash its number of artifacts.  Returns the keys deleted.
RELEASE = """
local head, infix, at, deleted = ARGV[3], ARGV[4], 1, {}
for group = 5, #ARGV do
  local refs, count = KEYS[at], tonumber(ARGV[group])
  redis.call('ZREM', refs, ARGV[1])
  redis.call('ZREMRANGEBYSCORE', refs, '-inf', '(' .. ARGV[2])
  if redis.call('ZCARD', refs) == 0 then
    for i = at + 1, at + count do
      if redis.call('GETRANGE', KEYS[i], 0, #head - 1) == head then
        local chunks = tonumber(string.sub(redis.call('GET', KEYS[i]), #head + 1))
        for c = 0, chunks - 1 do redis.call('DEL', KEYS[i] .. infix .. c) end
      end
      if redis.call('DEL', KEYS[i]) == 1 then table.insert(deleted, KEYS[i]) end
    end
  end
  at = at + count + 1
end
return deleted
"""

# One step of a SCAN cursor over the store's keys, summed where they are:
# per value of a field of the records (hashes named '<records>:<id>'), their
# count; per kind of artifact (strings named '<kind>:...'), their bytes.
# ARGV: cursor, match, count, prefix length, records, field, kinds...
# Returns {next cursor, {value, count, ...}, {kind, bytes, ...}}.
CENSUS_STEP = """
local step = redis.call('SCAN', ARGV[1], 'MATCH', ARGV[2], 'COUNT', ARGV[3])
local kinds, values, sizes = {}, {}, {}
for i = 7, #ARGV do kinds[ARGV[i]] = true end
for _, key in ipairs(step[2]) do
  local name = string.sub(key, tonumber(ARGV[4]) + 1)
  local group = string.match(name, '^[^:]*')
  if group == ARGV[5] then
    if not string.find(name, ':', #group + 2, true) then
      local value = redis.pcall('HGET', key, ARGV[6])
      if type(value) == 'string' then values[value] = (values[value] or 0) + 1 end
    end
  elseif kinds[group] then
    local size = redis.pcall('STRLEN', key)
    if type(size) == 'number' then sizes[group] = (sizes[group] or 0) + size end
  end
end
local out = {step[1], {}, {}}
for value, count in pairs(values) do table.insert(out[2], value); table.insert(out[2], count) end
for kind, size in pairs(sizes) do table.insert(out[3], kind); table.insert(out[3], size) end
return out
"""

# Claims the due members of a sorted set: each is pushed back to a lease's end,
# so a claimer that dies leaves it due again then.  KEYS[1] sorted set;
# ARGV: now, lease end, most to claim.  Returns the members.
CLAIM = """
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[3])
for _, member in ipairs(due) do redis.call('ZADD', KEYS[1], ARGV[2], member) end
return due
"""

# Takes a slot of a capped share: drops lapsed leases, then adds (or renews) the
# member if it holds one already or fewer than the cap are held; a member that
# finds none free is listed as waiting until ARGV[6].  KEYS[1] the slots, KEYS[2]
# the waiting (sorted sets); ARGV: now, lease end, cap, member, key ttl, waiting
# until.  Returns {1 if taken, members waiting}.
TAKE_SHARE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[1])
if redis.call('ZSCORE', KEYS[1], ARGV[4]) or redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[3]) then
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[4])
  redis.call('EXPIRE', KEYS[1], ARGV[5])
  redis.call('ZREM', KEYS[2], ARGV[4])
  return {1, redis.call('ZCARD', KEYS[2])}
end
redis.call('ZADD', KEYS[2], ARGV[6], ARGV[4])
redis.call('EXPIRE', KEYS[2], ARGV[5])
return {0, redis.call('ZCARD', KEYS[2])}
"""

# Adds an amount to the last of some counters unless the sum of them all would
# exceed a limit.  KEYS: the counters, the one to add to last; ARGV: amount,
# limit, ttl of the last.  Returns {1 when added else 0, the sum before}.
CHARGE = """
local total = 0
for _, key in ipairs(KEYS) do total = total + tonumber(redis.call('GET', key) or '0') end
if total + tonumber(ARGV[1]) > tonumber(ARGV[2]) then return {0, total} end
redis.call('INCRBY', KEYS[#KEYS], ARGV[1])
redis.call('EXPIRE', KEYS[#KEYS], ARGV[3])
return {1, total}
"""

# Takes a counted field out of a record and subtracts it from a counter (once,
# however many callers race; nothing when the counter expired).  The removal
# comes first: a full Redis refuses a script's first write only if it would add
# memory.  KEYS[1] record, KEYS[2] counter; ARGV: field.
REFUND = """
local amount = redis.call('HGET', KEYS[1], ARGV[1])
if not amount then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('DECRBY', KEYS[2], amount) end
return 1
"""

# Restarts the TTL of the artifacts that exist, with their chunks, and says
# which exist.  KEYS: the artifacts; ARGV: ttl, the head of a chunked value, the
# infix of its chunks' names.  Returns a 1 or 0 per key.
TOUCH = """
local head, found = ARGV[2], {}
for i, key in ipairs(KEYS) do
  if redis.call('EXPIRE', key, ARGV[1]) == 1 then
    found[i] = 1
    if redis.call('GETRANGE', key, 0, #head - 1) == head then
      local chunks = tonumber(string.sub(redis.call('GET', key), #head + 1))
      for c = 0, chunks - 1 do redis.call('EXPIRE', key .. ARGV[3] .. c, ARGV[1]) end
    end
  else
    found[i] = 0
  end
end
return found
"""

# Drops from a set of job ids those whose record is gone or no longer has one of
# some statuses, but one id (a job whose record is still to be made).  KEYS[1]
# the set; ARGV: the prefix of the records' keys, the id kept, the statuses
# (JSON).  Returns the set's size after.
PRUNE = """
for _, id in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local status, keep = redis.call('HGET', ARGV[1] .. id, 'status'), id == ARGV[2]
  for i = 3, #ARGV do if status == ARGV[i] then keep = true end end
  if not keep then redis.call('SREM', KEYS[1], id) end
end
return redis.call('SCARD', KEYS[1])
"""
