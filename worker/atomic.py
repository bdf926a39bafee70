"""Atomic primitives beside the artifact store's, for Redis and for memory.

Mixed into :class:`sca_worker.store.RedisStore` and
:class:`sca_worker.memory.MemoryStore`, so the API's idempotency keys, its
per-key job index and the metrics work alike on a Redis shared by every
process and in the embedded default.  Every method takes a *name* under the
store's prefix (as ``save_json`` does), never a full key:

* ``set_if`` / ``get_value`` / ``delete_if``: a value set only when absent
  (``SET NX``) or only while it still holds what the caller last saw (a
  compare-and-set), read, and deleted only while it holds that;
* ``index_add`` / ``index_page``: a sorted index of members, newest (highest
  score) first, paged after a member (its rank found and the page read in
  one step, so members added meanwhile never shift a page);
* ``hincr_many`` / ``hnumbers``: counters in one hash, added to atomically
  (a reader never sees half of one observation);
* ``census``: what the metrics derive at scrape time (records by status,
  artifact bytes by kind), in one pass of a cursor over the keys (``SCAN``),
  each step of 250 keys summed in Redis by a short script (Redis is
  never held for long).  SCAN counts every key that exists for the whole pass
  once, and may count a key twice while Redis resizes its table meanwhile
  (rare, and gone by the next scrape).  The script reads keys it is not
  given as ``KEYS``: one Redis, not a cluster.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

#: Keys read per SCAN step while scraping.
SCAN_BATCH = 250

# KEYS[1]; ARGV: expected, new value, ttl.
_SWAP = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3]) return 1
end
return 0
"""
# KEYS[1]; ARGV: expected.
_DELETE_IF = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
# KEYS[1] sorted set; ARGV: member to page after ('' = from the newest), count.
_PAGE = """
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
_CENSUS_STEP = """
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


def _glob(text: str) -> str:
    """``text`` with the glob characters of SCAN's MATCH escaped."""
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)


class RedisAtomic:
    """The primitives on Redis (``self.client``, ``self.key``)."""

    # Provided by the store this is mixed into.
    client: Any
    prefix: str
    key: Callable[[str], str]

    def _script(self, source: str):
        scripts = self.__dict__.setdefault("_atomic_scripts", {})
        if source not in scripts:
            scripts[source] = self.client.register_script(source)
        return scripts[source]

    def set_if(self, name: str, value: bytes, ttl: int, expected: bytes | None = None) -> bool:
        """Set ``name`` to ``value`` only when it is absent (``expected`` None) or
        holds exactly ``expected``; whether it was set."""
        if expected is None:
            return bool(self.client.set(self.key(name), value, nx=True, ex=int(ttl)))
        return bool(self._script(_SWAP)(keys=[self.key(name)], args=[expected, value, int(ttl)]))

    def get_value(self, name: str) -> bytes | None:
        return self.client.get(self.key(name))

    def delete_if(self, name: str, expected: bytes) -> bool:
        return bool(self._script(_DELETE_IF)(keys=[self.key(name)], args=[expected]))

    def index_add(
        self, name: str, member: str, score: float, ttl: int, drop_below: float | None = None
    ) -> None:
        """Add ``member`` at ``score``; drop members scored below ``drop_below``."""
        key = self.key(name)
        with self.client.pipeline(transaction=False) as pipe:
            pipe.zadd(key, {member: score})
            if drop_below is not None:
                pipe.zremrangebyscore(key, "-inf", f"({drop_below}")
            pipe.expire(key, int(ttl))
            pipe.execute()

    def index_page(self, name: str, after: str | None, count: int) -> list[str] | None:
        """Up to ``count`` members after ``after`` (from the newest when None),
        highest score first; None when ``after`` is not in the index."""
        found = self._script(_PAGE)(keys=[self.key(name)], args=[after or "", int(count)])
        return None if found is None else [m.decode() for m in found]

    def hincr_many(self, name: str, amounts: dict) -> None:
        """Add to several fields of one hash in one transaction (ints and floats)."""
        key = self.key(name)
        with self.client.pipeline(transaction=True) as pipe:
            for field, amount in amounts.items():
                if isinstance(amount, int):
                    pipe.hincrby(key, field, amount)
                else:
                    pipe.hincrbyfloat(key, field, amount)
            pipe.execute()

    def hnumbers(self, name: str) -> dict[str, float]:
        return {k.decode(): float(v) for k, v in self.client.hgetall(self.key(name)).items()}

    def census(self, records: str, field: str, kinds) -> tuple[Counter, Counter]:
        """In one pass over the store's keys: how many records (hashes named
        ``<records>:<id>``) hold each (JSON) value of ``field``, and the bytes of
        the string values named ``<kind>:...`` per kind.  Each SCAN step of
        :data:`SCAN_BATCH` keys is summed in Redis: no command, no reply per key."""
        step, cursor = self._script(_CENSUS_STEP), b"0"
        values: Counter = Counter()
        sizes: Counter = Counter()
        while True:
            cursor, found, stored = step(
                keys=[],
                args=[
                    cursor,
                    _glob(self.prefix) + "*",
                    SCAN_BATCH,
                    len(self.prefix.encode()),
                    records,
                    field,
                    *kinds,
                ],
            )
            for value, count in zip(found[::2], found[1::2]):
                values[json.loads(value)] += int(count)
            for kind, size in zip(stored[::2], stored[1::2]):
                sizes[kind.decode()] += int(size)
            if cursor in (b"0", "0", 0):
                return values, sizes


class MemoryAtomic:
    """The same primitives on the in-memory store (``self._lock``, ``self._live``,
    ``self._put``, ``self._data``)."""

    # Provided by the store this is mixed into.
    _lock: Any
    _data: dict

    def set_if(self, name, value, ttl, expected=None):
        with self._lock:
            current = self._live(self.key(name))
            if current != expected:
                return False
            self._put(self.key(name), bytes(value), int(ttl))
            return True

    def get_value(self, name):
        with self._lock:
            value = self._live(self.key(name))
            return value if isinstance(value, bytes) else None

    def delete_if(self, name, expected):
        with self._lock:
            if self._live(self.key(name)) != expected:
                return False
            self._data.pop(self.key(name), None)
            return True

    def index_add(self, name, member, score, ttl, drop_below=None):
        with self._lock:
            index = self._live(self.key(name))
            index = {} if index is None else index
            index[member] = float(score)
            if drop_below is not None and len(index) % 256 == 0:  # now and then: O(n)
                for old in [m for m, s in index.items() if s < drop_below]:
                    del index[old]
            self._put(self.key(name), index, int(ttl))

    def index_page(self, name, after, count):
        with self._lock:
            index = dict(self._live(self.key(name)) or {})
        # Redis's order: highest score first, ties by member, highest first.
        ordered = sorted(index, key=lambda m: (index[m], m), reverse=True)
        start = 0
        if after:
            if after not in index:
                return None
            start = ordered.index(after) + 1
        return ordered[start : start + int(count)]

    def hincr_many(self, name, amounts):
        with self._lock:
            item = self._data.get(self.key(name))
            counters = item[0] if item is not None else {}
            for field, amount in amounts.items():
                counters[field] = counters.get(field, 0) + amount
            self._data[self.key(name)] = (counters, float("inf"))

    def hnumbers(self, name):
        with self._lock:
            item = self._data.get(self.key(name))
            return {k: float(v) for k, v in (item[0] if item is not None else {}).items()}

    def _items(self, prefix: str):
        now = time.monotonic()
        with self._lock:
            return [
                (k, v)
                for k, (v, expires) in self._data.items()
                if k.startswith(prefix) and expires > now
            ]

    def census(self, records, field, kinds):
        values, sizes, kinds = Counter(), Counter(), set(kinds)
        offset = len(self.prefix)
        for key, value in self._items(self.prefix):
            group, _, rest = key[offset:].partition(":")
            if group == records and ":" not in rest and isinstance(value, dict):
                if field in value:
                    values[json.loads(value[field])] += 1
            elif group in kinds and isinstance(value, bytes):
                sizes[group] += len(value)
        return values, sizes
