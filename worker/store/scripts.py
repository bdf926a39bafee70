"""The Lua scripts of :class:`sca_worker.store.Store`: each runs atomically in Redis.

Every script reads its keys from ``KEYS`` except :data:`CENSUS_STEP`, which
reads the keys a ``SCAN`` step returns: one Redis, not a cluster.
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
# already held its new value, and reads the job back.  KEYS[1] job hash, KEYS[2]
# sorted set of live jobs ('' = none); ARGV: ttl, now, member, counter ('' =
# none), field compared, n_expected, expected..., field, value, field, value...
# Returns false when nothing was set, else {counter's value or 0, HGETALL}.
HSET_GET = """
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local n = tonumber(ARGV[6])
if n > 0 then
  local status = redis.call('HGET', KEYS[1], 'status')
  local ok = false
  for i = 7, 6 + n do if status == ARGV[i] then ok = true end end
  if not ok then return false end
end
local count, same = 0, false
for i = 7 + n, #ARGV, 2 do
  if ARGV[i] == ARGV[5] and redis.call('HGET', KEYS[1], ARGV[i]) == ARGV[i + 1] then
    same = true
  end
  redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
end
redis.call('EXPIRE', KEYS[1], ARGV[1])
if KEYS[2] ~= '' then redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3]) end
if ARGV[4] ~= '' and not same then count = redis.call('HINCRBY', KEYS[1], ARGV[4], 1) end
return {count, redis.call('HGETALL', KEYS[1])}
"""

# Adds to a job's counter field if the job exists, adds an observation to a
# histogram's hash, and reads the job back (false when it is gone).  KEYS[1] job
# hash, KEYS[2] histogram hash; ARGV: field, amount, then the histogram's
# field, amount, "int" or "float" triples.
HINCR_GET = """
for i = 3, #ARGV, 3 do
  if ARGV[i + 2] == 'int' then redis.call('HINCRBY', KEYS[2], ARGV[i], ARGV[i + 1])
  else redis.call('HINCRBYFLOAT', KEYS[2], ARGV[i], ARGV[i + 1]) end
end
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
redis.call('HINCRBYFLOAT', KEYS[1], ARGV[1], ARGV[2])
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

# KEYS[1] sorted set; ARGV: member to page after ('' = from the newest), count.
PAGE = """
local start = 0
if ARGV[1] ~= '' then
  local rank = redis.call('ZREVRANK', KEYS[1], ARGV[1])
  if not rank then return false end
  start = rank + 1
end
return redis.call('ZREVRANGE', KEYS[1], start, start + tonumber(ARGV[2]) - 1)
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
