"""The in-memory store of the embedded default (and of tests): one process, a lock."""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict

from .atomic import MemoryAtomic
from .store import ArtifactStore


class MemoryStore(MemoryAtomic, ArtifactStore):
    """An in-process store with the same behaviour (the embedded default, tests)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._data: dict[str, tuple[object, float]] = {}
        self._lock = threading.RLock()
        self._named: dict[str, threading.Lock] = defaultdict(threading.Lock)

    def _live(self, key):
        item = self._data.get(key)
        if item is None:
            return None
        if item[1] <= time.monotonic():
            del self._data[key]
            return None
        return item[0]

    def _put(self, key, value, ttl):
        self._data[key] = (value, time.monotonic() + ttl)

    def _set(self, key, value, ttl):
        with self._lock:
            self._put(key, bytes(value), ttl)

    def _get(self, key):
        with self._lock:
            value = self._live(key)
            return value if isinstance(value, bytes) else None

    def _delete(self, keys):
        with self._lock:
            for key in keys:
                self._data.pop(key, None)

    def _expire(self, keys, ttl):
        with self._lock:
            for key in keys:
                value = self._live(key)
                if value is not None:
                    self._put(key, value, ttl)

    def _hcreate(self, key, mapping, ttl):
        with self._lock:
            self._put(key, {**(self._live(key) or {}), **mapping}, ttl)

    def _hupdate(self, key, mapping, ttl, expect):
        with self._lock:
            current = self._live(key)
            if current is None or expect and current.get("status") not in expect:
                return False
            self._put(key, {**current, **mapping}, ttl)
            return True

    def _hgetall(self, key):
        with self._lock:
            return dict(self._live(key) or {})

    def _hincr(self, key, field, amount):
        with self._lock:
            record = self._live(key)
            if record is None:
                return None
            value = json.loads(record.get(field, b"0")) + amount
            record[field] = json.dumps(value).encode()
            return value

    def sadd(self, key, member, ttl):
        with self._lock:
            members = set(self._live(key) or ())
            members.add(member)
            self._put(key, members, ttl)

    def srem(self, key, member):
        with self._lock:
            members = self._live(key)
            if members:
                members.discard(member)

    def smembers(self, key):
        with self._lock:
            return set(self._live(key) or ())

    def ping(self):
        return True

    def lock(self, name, timeout=30):
        with self._lock:
            return self._named[name]
