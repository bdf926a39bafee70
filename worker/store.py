"""Artifact and job-record store: Redis for deployments, memory for the embedded default.

Arrays travel as ``.npz`` bytes (``np.savez``, read back with
``allow_pickle=False``), never through the broker.  An artifact larger than
``chunk_bytes`` is split into several values, because a Redis string holds at
most 512 MB; its head key then records the number of chunks.  Chunks are
written before the head, so a reader never sees half an artifact.

Job records are hashes of JSON-encoded fields (counters are plain numbers,
which are JSON too).  Every key expires ``ttl`` seconds after its last write.

Both stores share this logic through a handful of primitives
(:class:`ArtifactStore` subclasses implement ``_set``, ``_get`` ...; the set
primitives ``sadd``, ``srem`` and ``smembers`` and :meth:`ArtifactStore.key` are
public, for the modules that keep sets of their own).  The atomic primitives of
:mod:`sca_worker.atomic` (set-if-absent and compare-and-set values, sorted
indexes, counter hashes, scans for metrics) are mixed into both stores.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Mapping

import numpy as np

from .atomic import RedisAtomic
from .config import DEFAULTS, resolve

_HEAD = b"SCACHUNKS:"
#: Longest hold of a store lock (a holder that dies frees it after this).
_LOCK_SECONDS = 30


class ArtifactMissing(KeyError):
    """An artifact or JSON value is absent (never written, expired or deleted)."""


class ArtifactStore:
    """Arrays, JSON values and job records under one key prefix with a TTL."""

    def __init__(
        self,
        ttl: int = DEFAULTS["SCA_JOB_TTL"],
        chunk_bytes: int = DEFAULTS["SCA_CHUNK_BYTES"],
        prefix: str = DEFAULTS["SCA_KEY_PREFIX"],
    ):
        if ttl < 1 or chunk_bytes < 1:
            raise ValueError("ttl and chunk_bytes must be positive")
        self.ttl = int(ttl)
        self.chunk_bytes = int(chunk_bytes)
        self.prefix = prefix

    # -- primitives each backend provides ---------------------------------------------
    def _set(self, key: str, value: bytes, ttl: int) -> None:
        raise NotImplementedError

    def _get(self, key: str) -> bytes | None:
        raise NotImplementedError

    def _peek(self, key: str, size: int) -> bytes | None:
        """The first ``size`` bytes of a value (None when absent), without reading it all."""
        value = self._get(key)
        return None if value is None else value[:size]

    def _delete(self, keys: list[str]) -> None:
        raise NotImplementedError

    def _expire(self, keys: list[str], ttl: int) -> None:
        raise NotImplementedError

    def _hcreate(self, key: str, mapping: dict[str, bytes], ttl: int) -> None:
        """Set hash fields, creating the hash if need be."""
        raise NotImplementedError

    def _hupdate(
        self, key: str, mapping: dict[str, bytes], ttl: int, expect: tuple[bytes, ...]
    ) -> bool:
        """Set fields of an existing hash (atomically), and only while its
        ``status`` field is one of ``expect`` when that is not empty."""
        raise NotImplementedError

    def _hgetall(self, key: str) -> dict[str, bytes]:
        raise NotImplementedError

    def _hincr(self, key: str, field: str, amount: float) -> float | None:
        """Add to a field of an existing hash (None, and no hash created, when it is absent)."""
        raise NotImplementedError

    def sadd(self, key: str, member: str, ttl: int) -> None:
        """Add to the set at the full key ``key`` (see :meth:`key`)."""
        raise NotImplementedError

    def srem(self, key: str, member: str) -> None:
        raise NotImplementedError

    def smembers(self, key: str) -> set[str]:
        raise NotImplementedError

    def lock(self, name: str, timeout: float = 30):
        """A mutual-exclusion lock over every process that shares this store
        (a context manager), held at most ``timeout`` seconds."""
        raise NotImplementedError

    def ping(self) -> bool:
        raise NotImplementedError

    # -- arrays ---------------------------------------------------------------------------
    def key(self, name: str) -> str:
        """The full key of ``name`` (under this store's prefix)."""
        return self.prefix + name

    def save_arrays(
        self, name: str, arrays: Mapping[str, np.ndarray], ttl: int | None = None
    ) -> int:
        """Store ``arrays`` as one ``.npz`` artifact; returns its size in bytes."""
        arrays = {k: np.asarray(v) for k, v in arrays.items()}
        for key, value in arrays.items():
            if value.dtype.hasobject:
                raise ValueError(f"artifact {name}: array {key!r} has object dtype (would pickle)")
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)  # type: ignore[arg-type]  # numpy's stub: **kwds as arrays
        data = buffer.getbuffer()
        self.save_bytes(name, data, ttl)
        return data.nbytes

    def load_arrays(self, name: str) -> dict[str, np.ndarray]:
        data = self.load_bytes(name)
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            return {k: npz[k] for k in npz.files}

    def save_bytes(self, name: str, data, ttl: int | None = None) -> None:
        ttl = self.ttl if ttl is None else int(ttl)
        key = self.key(name)
        view = memoryview(data).cast("B")
        if view.nbytes <= self.chunk_bytes:
            self._set(key, bytes(view), ttl)
            return
        count = -(-view.nbytes // self.chunk_bytes)
        for i in range(count):
            chunk = bytes(view[i * self.chunk_bytes : (i + 1) * self.chunk_bytes])
            self._set(f"{key}:chunk:{i}", chunk, ttl)
        self._set(key, _HEAD + str(count).encode(), ttl)

    def load_bytes(self, name: str) -> bytes:
        key = self.key(name)
        head = self._get(key)
        if head is None:
            raise ArtifactMissing(name)
        if not head.startswith(_HEAD):
            return head
        count = int(head[len(_HEAD) :])
        parts = []
        for i in range(count):
            part = self._get(f"{key}:chunk:{i}")
            if part is None:
                raise ArtifactMissing(f"{name} (chunk {i})")
            parts.append(part)
        return b"".join(parts)

    def _artifact_keys(self, name: str) -> list[str]:
        key = self.key(name)
        keys = [key]
        if self._peek(key, len(_HEAD)) == _HEAD:
            head = self._get(key) or b""
            if head.startswith(_HEAD):
                keys += [f"{key}:chunk:{i}" for i in range(int(head[len(_HEAD) :]))]
        return keys

    def has(self, name: str) -> bool:
        return self._peek(self.key(name), 1) is not None

    def delete(self, *names: str) -> None:
        keys = [k for name in names for k in self._artifact_keys(name)]
        if keys:
            self._delete(keys)

    def touch(self, *names: str, ttl: int | None = None) -> None:
        """Restart the TTL of existing artifacts (cache hits keep them alive)."""
        keys = [k for name in names for k in self._artifact_keys(name)]
        if keys:
            self._expire(keys, self.ttl if ttl is None else int(ttl))

    # -- JSON values ------------------------------------------------------------------------
    def save_json(self, name: str, value, ttl: int | None = None) -> None:
        self.save_bytes(name, json.dumps(value, separators=(",", ":")).encode(), ttl)

    def load_json(self, name: str):
        return json.loads(self.load_bytes(name))

    # -- job records ------------------------------------------------------------------------
    def _job_key(self, job_id: str) -> str:
        return self.key(f"job:{job_id}")

    def create_job(self, job_id: str, fields: Mapping) -> None:
        self._hcreate(self._job_key(job_id), _encode(fields), self.ttl)

    def get_job(self, job_id: str) -> dict | None:
        raw = self._hgetall(self._job_key(job_id))
        if not raw:
            return None
        return {k: json.loads(v) for k, v in raw.items()}

    def update_job(self, job_id: str, fields: Mapping, expect: Iterable[str] | None = None) -> bool:
        """Set fields of an existing job; with ``expect``, only while its status is one of them.

        Returns whether the update happened.
        """
        expected = tuple(json.dumps(s).encode() for s in expect or ())
        return self._hupdate(self._job_key(job_id), _encode(fields), self.ttl, expected)

    def incr_job(self, job_id: str, field: str, amount: float = 1) -> float | None:
        """Add to a counter of an existing job; None (and no record made) when it is gone."""
        return self._hincr(self._job_key(job_id), field, amount)

    def delete_job(self, job_id: str) -> None:
        key = self._job_key(job_id)
        self._delete([key, key + ":tasks", key + ":events"])

    def add_task(self, job_id: str, task_id: str) -> None:
        self.sadd(self._job_key(job_id) + ":tasks", task_id, self.ttl)

    def remove_task(self, job_id: str, task_id: str) -> None:
        self.srem(self._job_key(job_id) + ":tasks", task_id)

    def job_tasks(self, job_id: str) -> set[str]:
        return self.smembers(self._job_key(job_id) + ":tasks")


def _encode(fields: Mapping) -> dict[str, bytes]:
    return {k: json.dumps(v, separators=(",", ":")).encode() for k, v in fields.items()}


# Sets hash fields if the hash exists and (when given) its status is expected.
# KEYS[1] hash; ARGV: ttl, n_expected, expected..., field, value, field, value...
_HSET_SCRIPT = """
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
_HINCR_SCRIPT = """
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
if ARGV[3] == 'int' then
  return tostring(redis.call('HINCRBY', KEYS[1], ARGV[1], ARGV[2]))
end
return redis.call('HINCRBYFLOAT', KEYS[1], ARGV[1], ARGV[2])
"""


class RedisStore(RedisAtomic, ArtifactStore):
    """The store on a Redis server (shared by the API and every worker)."""

    def __init__(self, client, **kwargs):
        super().__init__(**kwargs)
        self.client = client
        self._hset_script = client.register_script(_HSET_SCRIPT)
        self._hincr_script = client.register_script(_HINCR_SCRIPT)

    @classmethod
    def from_url(
        cls, url: str, timeout: float = DEFAULTS["SCA_REDIS_TIMEOUT"], **kwargs
    ) -> RedisStore:
        """Connect to ``redis://`` or ``rediss://`` (TLS; query options such as
        ``ssl_ca_certs``); ``timeout`` bounds each connect and each command."""
        import redis

        client = redis.Redis.from_url(
            url, health_check_interval=30, socket_timeout=timeout, socket_connect_timeout=timeout
        )
        return cls(client, **kwargs)

    def _set(self, key, value, ttl):
        self.client.set(key, value, ex=ttl)

    def _get(self, key):
        return self.client.get(key)

    def _peek(self, key, size):
        with self.client.pipeline(transaction=False) as pipe:
            pipe.exists(key)
            pipe.getrange(key, 0, size - 1)
            exists, prefix = pipe.execute()
        return prefix if exists else None

    def _delete(self, keys):
        self.client.delete(*keys)

    def _expire(self, keys, ttl):
        with self.client.pipeline(transaction=False) as pipe:
            for key in keys:
                pipe.expire(key, ttl)
            pipe.execute()

    def _hcreate(self, key, mapping, ttl):
        with self.client.pipeline() as pipe:
            pipe.hset(key, mapping=mapping)
            pipe.expire(key, ttl)
            pipe.execute()

    def _hupdate(self, key, mapping, ttl, expect):
        args = [ttl, len(expect), *expect]
        for field, value in mapping.items():
            args += [field, value]
        return bool(self._hset_script(keys=[key], args=args))

    def _hgetall(self, key):
        return {k.decode(): v for k, v in self.client.hgetall(key).items()}

    def _hincr(self, key, field, amount):
        whole = float(amount).is_integer()
        value = self._hincr_script(
            keys=[key], args=[field, int(amount) if whole else amount, "int" if whole else "float"]
        )
        if value is None:
            return None
        return int(value) if whole else float(value)

    def sadd(self, key, member, ttl):
        with self.client.pipeline() as pipe:
            pipe.sadd(key, member)
            pipe.expire(key, ttl)
            pipe.execute()

    def srem(self, key, member):
        self.client.srem(key, member)

    def smembers(self, key):
        return {m.decode() for m in self.client.smembers(key)}

    def ping(self):
        return bool(self.client.ping())

    def lock(self, name, timeout=_LOCK_SECONDS):
        # redis-py's lock: SET NX PX to take it, a Lua script to give it back
        return self.client.lock(self.key(f"lock:{name}"), timeout=timeout, blocking_timeout=timeout)


def __getattr__(name: str):
    # The in-memory form lives in its own module, which imports this one: it is
    # reachable from here on first use, whichever of the two is imported first.
    if name == "MemoryStore":
        from .memory import MemoryStore

        return MemoryStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def store_from_settings(settings: Mapping) -> ArtifactStore:
    """A :class:`RedisStore` when ``REDIS_URL`` is set, else a :class:`MemoryStore`."""
    settings = resolve(settings)
    kwargs = {
        "ttl": settings["SCA_JOB_TTL"],
        "chunk_bytes": settings["SCA_CHUNK_BYTES"],
        "prefix": settings["SCA_KEY_PREFIX"],
    }
    if not settings["REDIS_URL"]:
        from .memory import MemoryStore

        return MemoryStore(**kwargs)
    return RedisStore.from_url(
        settings["REDIS_URL"], timeout=settings["SCA_REDIS_TIMEOUT"], **kwargs
    )
