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
