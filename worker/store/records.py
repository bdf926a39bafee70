"""Job records, their tasks and events; sorted indexes; counter hashes; the census.

Job records are hashes of JSON-encoded fields, updated by scripts that check
the record still exists (and, when asked, its status), so a deleted job is
never re-created by a late write.  A job's events are a Redis stream
(``XADD ... MAXLEN ~``, expiring with the job); an event's id is its stream id
(``<milliseconds>-<sequence>``), and a reader resumes after any id it saw
(``XREAD``).  Indexes page after a member (its rank found and the page read
in one script, so members added meanwhile never shift a page).  Counter
hashes are added to in one transaction (a reader never sees half of one
observation).  The census walks the keys with a cursor (``SCAN``), each step
of :data:`SCAN_BATCH` keys summed in Redis by a script: Redis is never held
for long.  SCAN counts every key that exists for the whole pass once, and may
count a key twice while Redis resizes its table meanwhile (rare, and gone by
the next scrape).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterable, Mapping

from . import keys
from .base import HEAD, StoreBase, encode, expected_statuses

#: Keys read per SCAN step of the census.
SCAN_BATCH = 250
#: Events kept per job (the oldest are dropped beyond; a job with ensemble runs
#: writes at most about 30).
EVENTS_KEPT = 1000
#: Longest single blocking read of events; below any sensible SCA_REDIS_TIMEOUT.
EVENTS_BLOCK = 2.0


def _glob(text: str) -> str:
    """``text`` with the glob characters of SCAN's MATCH escaped."""
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _record(flat: list) -> dict:
    """A job record from a script's ``HGETALL`` (field, value, field, value...)."""
    return {_text(flat[i]): json.loads(flat[i + 1]) for i in range(0, len(flat), 2)}


class Records(StoreBase):
    # -- job records --------------------------------------------------------------------------
    def create_job(self, job_id: str, fields: Mapping, alive: bool = False) -> None:
        """Create a job's record; with ``alive``, give it its first sign of life in
        the same transaction (see :mod:`sca_worker.heartbeat`), so a record whose
        submitter dies at any moment after is found by the watchdogs."""
        key = self.key(keys.job(job_id))
        with self.client.pipeline() as pipe:
            pipe.hset(key, mapping=encode(fields))
            pipe.expire(key, self.ttl)
            if alive:
                pipe.zadd(self.key(keys.alive()), {job_id: time.time()})
            pipe.execute()

    def get_job(self, job_id: str) -> dict | None:
        raw = self.client.hgetall(self.key(keys.job(job_id)))
        if not raw:
            return None
        return {k.decode(): json.loads(v) for k, v in raw.items()}

    def update_job(self, job_id: str, fields: Mapping, expect: Iterable[str] | None = None) -> bool:
        """Set fields of an existing job; with ``expect``, only while its status is one of them.

        Returns whether the update happened.
        """
        expected = expected_statuses(expect)
        args: list = [self.ttl, len(expected), *expected]
        for field, value in encode(fields).items():
            args += [field, value]
        return bool(self._scripts["HSET_IF"](keys=[self.key(keys.job(job_id))], args=args))

    def update_and_get(
        self,
        job_id: str,
        fields: Mapping,
        expect: Iterable[str] | None = None,
        alive: bool = False,
        count: str | None = None,
        unless_same: str = "",
        event: tuple[str, str] | None = None,
    ) -> tuple[int, dict] | None:
        """:meth:`update_job` and, in the same round trip, the job marked alive
        (``alive``), the counter field ``count`` added to unless the field
        ``unless_same`` already held its new value, the ``event`` (name, data)
        appended to its events (with ``count``, only when the counter reached 1;
        see :meth:`append_event`), and the record read back.

        Returns ``(count's value or 0, record)``, or None when nothing was set.
        """
        expected = expected_statuses(expect)
        name, data = event or ("", "")
        args: list = [self.ttl, time.time(), job_id, count or "", unless_same, name, data]
        args += [EVENTS_KEPT, len(expected), *expected]
        for field, value in encode(fields).items():
            args += [field, value]
        found = self._scripts["HSET_GET"](
            keys=[
                self.key(keys.job(job_id)),
                self.key(keys.alive()) if alive else "",
                self.key(keys.job_events(job_id)) if event else "",
            ],
            args=args,
        )
        if not found:
            return None
        return int(found[0]), _record(found[1])

    def incr_and_get(
        self,
        job_id: str,
        field: str,
        amount: float,
        histogram: str,
        amounts: Mapping,
        event: tuple[str, str, str] | None = None,
    ) -> dict | None:
        """Add ``amount`` to a job's counter field and ``amounts`` to the hash
        ``histogram`` (as :meth:`hincr_many`), append ``event`` (name, data, the
        status the job must still have) to its events, and read the job back: one
        round trip.  None when the job is gone (the histogram is added to all the same)."""
        name, data, status = event or ("", "", "")
        args: list = [field, float(amount), self.ttl, name, data, EVENTS_KEPT]
        args.append(json.dumps(status).encode() if event else "")
        for key, value in amounts.items():
            args += [key, value, "int" if isinstance(value, int) else "float"]
        found = self._scripts["HINCR_GET"](
            keys=[
                self.key(keys.job(job_id)),
                self.key(histogram),
                self.key(keys.job_events(job_id)) if event else "",
            ],
            args=args,
        )
        return _record(found) if found else None

    def incr_job(self, job_id: str, field: str, amount: float = 1) -> float | None:
        """Add to a counter of an existing job; None (and no record made) when it is gone."""
        whole = float(amount).is_integer()
        value = self._scripts["HINCR_IF"](
            keys=[self.key(keys.job(job_id))],
            args=[field, int(amount) if whole else amount, "int" if whole else "float"],
        )
        if value is None:
            return None
        return int(value) if whole else float(value)

    def delete_job(self, job_id: str) -> None:
        names = (keys.job(job_id), keys.job_tasks(job_id), keys.job_events(job_id))
        self.client.delete(*(self.key(name) for name in names))

    def add_task(self, job_id: str, task_id: str) -> None:
        self.sadd(keys.job_tasks(job_id), task_id, self.ttl)

    def remove_task(self, job_id: str, task_id: str) -> None:
        self.srem(keys.job_tasks(job_id), task_id)

    def job_tasks(self, job_id: str) -> set[str]:
        return self.smembers(keys.job_tasks(job_id))

    # -- job events ---------------------------------------------------------------------------
    def append_event(self, job_id: str, event: str, data: str) -> str:
        """Append an event to the job's log; its id."""
        key = self.key(keys.job_events(job_id))
        with self.client.pipeline() as pipe:
            pipe.xadd(key, {"e": event, "d": data}, maxlen=EVENTS_KEPT, approximate=True)
            pipe.expire(key, self.ttl)
            event_id, _ = pipe.execute()
        return _text(event_id)

    def read_events(self, job_id: str, after: str | None, wait: float) -> list[tuple]:
        """Up to 100 events after the id ``after`` (from the first when None), as
        ``(id, event, data)``; waits up to ``wait`` seconds (at most
        :data:`EVENTS_BLOCK`) for one."""
        block = int(min(wait, EVENTS_BLOCK) * 1000)
        found = self.client.xread(
            {self.key(keys.job_events(job_id)): after or "0-0"},
            count=100,
            block=block if block > 0 else None,
        )
        return [
            (_text(event_id), _text(fields[b"e"]), _text(fields[b"d"]))
            for _, entries in found or []
            for event_id, fields in entries
        ]

    # -- sorted indexes -------------------------------------------------------------------------
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

    def index_page(
        self, name: str, after: str | None, count: int, removed: str | None = None
    ) -> list[str] | None:
        """Up to ``count`` members after ``after`` (from the newest when None),
        highest score first; None when ``after`` is neither in the index nor among
        its ``removed`` members (see :meth:`index_remove`)."""
        names = [self.key(name), self.key(removed or name)]
        found = self._scripts["PAGE"](keys=names, args=[after or "", int(count)])
        return None if found is None else [m.decode() for m in found]

    def index_remove(
        self, name: str, removed: str, member: str, ttl: int, drop_below: float
    ) -> bool:
        """Move ``member`` from the index ``name`` to its ``removed`` members (the
        index then holds live members only, and a page after a removed member is
        still found); drop removed members scored below ``drop_below``.  Whether
        ``member`` was in the index."""
        names = [self.key(name), self.key(removed)]
        return bool(self._scripts["UNLIST"](keys=names, args=[member, drop_below, int(ttl)]))

    # -- references to shared artifacts --------------------------------------------------------
    def refer(self, member: str, refs: Iterable[str], score: float, ttl: int) -> None:
        """Add ``member`` at ``score`` to each sorted set of references ``refs``, in
        one transaction."""
        with self.client.pipeline() as pipe:
            for name in refs:
                pipe.zadd(self.key(name), {member: score})
                pipe.expire(self.key(name), int(ttl))
            pipe.execute()

    def unrefer(
        self, member: str, shared: Mapping[str, Iterable[str]], drop_below: float
    ) -> list[str]:
        """Remove ``member`` from each set of references in ``shared`` (with those
        scored below ``drop_below``) and delete the artifacts that ``shared`` lists
        under each set left empty, in one atomic step; the names deleted."""
        names: list[str] = []
        counts: list[int] = []
        for refs, artifacts in shared.items():
            artifacts = list(artifacts)
            names += [refs, *artifacts]
            counts.append(len(artifacts))
        deleted = self._scripts["RELEASE"](
            keys=[self.key(name) for name in names],
            args=[member, drop_below, HEAD, keys.CHUNK_INFIX, *counts],
        )
        skip = len(self.prefix.encode())
        return [_text(key[skip:]) for key in deleted]

    # -- counter hashes --------------------------------------------------------------------
    def hincr_many(self, name: str, amounts: Mapping) -> None:
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

    # -- text hashes -----------------------------------------------------------------------
    def hset_text(self, name: str, field: str, value: str) -> None:
        self.client.hset(self.key(name), field, value)

    def htexts(self, name: str) -> dict[str, str]:
        return {k.decode(): v.decode() for k, v in self.client.hgetall(self.key(name)).items()}

    def hdel(self, name: str, *fields: str) -> None:
        self.client.hdel(self.key(name), *fields)

    # -- the census ------------------------------------------------------------------------
    def census(self, records: str, field: str, kinds: Iterable[str]) -> tuple[Counter, Counter]:
        """In one pass over the store's keys: how many records (hashes named
        ``<records>:<id>``) hold each (JSON) value of ``field``, and the bytes of
        the string values named ``<kind>:...`` per kind.  Each SCAN step of
        :data:`SCAN_BATCH` keys is summed in Redis: no command, no reply per key."""
        step, cursor = self._scripts["CENSUS_STEP"], b"0"
        values: Counter = Counter()
        sizes: Counter = Counter()
        match, skip = _glob(self.prefix) + "*", len(self.prefix.encode())
        while True:
            cursor, found, stored = step(
                keys=[], args=[cursor, match, SCAN_BATCH, skip, records, field, *kinds]
            )
            for value, count in zip(found[::2], found[1::2]):
                values[json.loads(value)] += int(count)
            for kind, size in zip(stored[::2], stored[1::2]):
                sizes[_text(kind)] += int(size)
            if cursor in (b"0", "0", 0):
                return values, sizes
