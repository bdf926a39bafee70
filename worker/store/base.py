"""The store's connection, artifacts, JSON values, plain values and sets.

Arrays travel as ``.npz`` bytes (``np.savez``, read back with
``allow_pickle=False``), never through the broker.  An artifact larger than
``chunk_bytes`` is split into several values, because a Redis string holds at
most 512 MB; its head key then records the number of chunks.  Chunks are
written before the head, so a reader never sees half an artifact.  Every key
expires ``ttl`` seconds after its last write.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterable, Mapping

import numpy as np
import redis

from ..config import DEFAULTS
from . import keys, scripts

#: The value of a chunked artifact's head key: this, then its number of chunks.
HEAD = b"SCACHUNKS:"


class ArtifactMissing(KeyError):
    """An artifact or JSON value is absent (never written, expired or deleted)."""


class StoreBase:
    """Arrays, JSON values, values and sets under one key prefix with a TTL,
    on a Redis client (a server's, or an in-process one: see :meth:`in_process`).

    Every method takes *names* (see :mod:`sca_worker.store.keys`), never keys.
    """

    def __init__(
        self,
        client,
        ttl: int = DEFAULTS["SCA_JOB_TTL"],
        chunk_bytes: int = DEFAULTS["SCA_CHUNK_BYTES"],
        prefix: str = DEFAULTS["SCA_KEY_PREFIX"],
    ):
        if ttl < 1 or chunk_bytes < 1:
            raise ValueError("ttl and chunk_bytes must be positive")
        self.client = client
        self.ttl = int(ttl)
        self.chunk_bytes = int(chunk_bytes)
        self.prefix = prefix
        self._scripts = {
            name: client.register_script(getattr(scripts, name))
            for name in (
                "HSET_IF",
                "HSET_GET",
                "HINCR_IF",
                "HINCR_GET",
                "SWAP",
                "DELETE_IF",
                "PAGE",
                "UNLIST",
                "RELEASE",
                "CHARGE",
                "REFUND",
                "CENSUS_STEP",
                "CLAIM",
                "TAKE_SHARE",
                "TOUCH",
                "PRUNE",
            )
        }
        #: Called when this process queues a webhook: the embedded runner's deliverer
        #: starts then (see :class:`sca_worker.webhooks.Deliverer`); None elsewhere.
        self.on_webhook: Callable[[], object] | None = None

    @classmethod
    def from_url(cls, url: str, timeout: float = DEFAULTS["SCA_REDIS_TIMEOUT"], **kwargs):
        """Connect to ``redis://`` or ``rediss://`` (TLS; query options such as
        ``ssl_ca_certs``); ``timeout`` bounds each connect and each command."""
        client = redis.Redis.from_url(
            url, health_check_interval=30, socket_timeout=timeout, socket_connect_timeout=timeout
        )
        return cls(client, **kwargs)

    @classmethod
    def in_process(cls, **kwargs):
        """A store on a Redis of its own in this process (fakeredis): the embedded default."""
        # Here, not at the top: fakeredis and its Lua (a third of a second to
        # import) are for the embedded default only, not Redis mode's processes.
        import fakeredis

        return cls(fakeredis.FakeRedis(server=fakeredis.FakeServer()), **kwargs)

    def key(self, name: str) -> str:
        """The Redis key of ``name`` (under this store's prefix)."""
        return self.prefix + name

    def ping(self) -> bool:
        return bool(self.client.ping())

    # -- artifacts ----------------------------------------------------------------------------
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
        view = memoryview(data).cast("B")
        if view.nbytes <= self.chunk_bytes:
            self.client.set(self.key(name), bytes(view), ex=ttl)
            return
        count = -(-view.nbytes // self.chunk_bytes)
        for i in range(count):
            chunk = bytes(view[i * self.chunk_bytes : (i + 1) * self.chunk_bytes])
            self.client.set(self.key(keys.chunk(name, i)), chunk, ex=ttl)
        self.client.set(self.key(name), HEAD + str(count).encode(), ex=ttl)

    def load_bytes(self, name: str) -> bytes:
        head = self.client.get(self.key(name))
        if head is None:
            raise ArtifactMissing(name)
        if not head.startswith(HEAD):
            return head
        count = int(head[len(HEAD) :])
        parts = []
        for i in range(count):
            part = self.client.get(self.key(keys.chunk(name, i)))
            if part is None:
                raise ArtifactMissing(f"{name} (chunk {i})")
            parts.append(part)
        return b"".join(parts)

    def _peek(self, name: str, size: int) -> bytes | None:
        """The first ``size`` bytes of a value (None when absent), without reading it all."""
        with self.client.pipeline(transaction=False) as pipe:
            pipe.exists(self.key(name))
            pipe.getrange(self.key(name), 0, size - 1)
            exists, prefix = pipe.execute()
        return prefix if exists else None

    def _artifact_keys(self, *names: str) -> list[str]:
        """The Redis keys of artifacts: each one's head, then its chunks (two round
        trips at most, whatever the number of names)."""
        size = len(HEAD)
        with self.client.pipeline(transaction=False) as pipe:
            for name in names:
                pipe.getrange(self.key(name), 0, size - 1)
            prefixes = pipe.execute() if names else []
        found = [self.key(name) for name in names]
        split = [name for name, prefix in zip(names, prefixes, strict=True) if prefix == HEAD]
        if split:
            for name, head in zip(
                split, self.client.mget([self.key(n) for n in split]), strict=True
            ):
                if head and head.startswith(HEAD):
                    count = int(head[len(HEAD) :])
                    found += [self.key(keys.chunk(name, i)) for i in range(count)]
        return found

    def has(self, name: str) -> bool:
        return self._peek(name, 1) is not None

    def existing(self, *names: str) -> set[str]:
        """Those of ``names`` that exist, in one round trip."""
        with self.client.pipeline(transaction=False) as pipe:
            for name in names:
                pipe.exists(self.key(name))
            found = pipe.execute() if names else []
        return {name for name, there in zip(names, found, strict=True) if there}

    def delete(self, *names: str) -> None:
        found = self._artifact_keys(*names) if names else []
        if found:
            self.client.delete(*found)

    def touch(self, *names: str, ttl: int | None = None) -> set[str]:
        """Restart the TTL of existing artifacts (cache hits keep them alive), with
        their chunks, in one round trip; the names that exist."""
        if not names:
            return set()
        found = self._scripts["TOUCH"](
            keys=[self.key(name) for name in names],
            args=[self.ttl if ttl is None else int(ttl), HEAD, keys.CHUNK_INFIX],
        )
        return {name for name, there in zip(names, found, strict=True) if int(there)}

    def save_json(self, name: str, value, ttl: int | None = None) -> None:
        self.save_bytes(name, json.dumps(value, separators=(",", ":")).encode(), ttl)

    def load_json(self, name: str):
        return json.loads(self.load_bytes(name))

    # -- values set once, or compared and set -------------------------------------------------
    def set_if(self, name: str, value: bytes, ttl: int, expected: bytes | None = None) -> bool:
        """Set ``name`` to ``value`` only when it is absent (``expected`` None,
        ``SET NX``) or holds exactly ``expected``; whether it was set."""
        if expected is None:
            return bool(self.client.set(self.key(name), value, nx=True, ex=int(ttl)))
        return bool(self._scripts["SWAP"](keys=[self.key(name)], args=[expected, value, int(ttl)]))

    def get_value(self, name: str) -> bytes | None:
        return self.client.get(self.key(name))

    def delete_if(self, name: str, expected: bytes) -> bool:
        """Delete ``name`` only while it holds ``expected``; whether it was deleted."""
        return bool(self._scripts["DELETE_IF"](keys=[self.key(name)], args=[expected]))

    # -- sets -----------------------------------------------------------------------------------
    def sadd(self, name: str, member: str, ttl: int) -> int:
        """Add to the set ``name`` (restarting its TTL); its size after."""
        with self.client.pipeline() as pipe:
            pipe.sadd(self.key(name), member)
            pipe.expire(self.key(name), int(ttl))
            pipe.scard(self.key(name))
            return int(pipe.execute()[2])

    def srem(self, name: str, *members: str) -> None:
        self.client.srem(self.key(name), *members)

    def smembers(self, name: str) -> set[str]:
        return {m.decode() for m in self.client.smembers(self.key(name))}


def encode(fields: Mapping) -> dict[str, bytes]:
    """Fields of a record as JSON bytes (counters are plain numbers, which are JSON too)."""
    return {k: json.dumps(v, separators=(",", ":")).encode() for k, v in fields.items()}


def expected_statuses(expect: Iterable[str] | None) -> tuple[bytes, ...]:
    return tuple(json.dumps(s).encode() for s in expect or ())
