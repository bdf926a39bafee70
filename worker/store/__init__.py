"""The store: every Redis feature of the service behind one interface.

The API, the Celery workers and the embedded default keep everything in one
:class:`Store` (artifacts and JSON values, job records, their tasks and
events, idempotency values, sorted indexes, references to shared artifacts,
counters, liveness, per-key limits, the broker's queue depth, Redis's state).  Nothing outside
this package touches the Redis client, and every key's name comes from
:mod:`sca_worker.store.keys`, one function per family.  The modules:

* :mod:`~sca_worker.store.keys`: the names of the keys;
* :mod:`~sca_worker.store.base`: the connection, artifacts (chunked ``.npz``
  and JSON), plain values and sets;
* :mod:`~sca_worker.store.records`: job records, tasks and events, sorted
  indexes, references to shared artifacts, counter hashes, the metrics' census;
* :mod:`~sca_worker.store.coordination`: liveness (heartbeats), per-key
  limits, the broker's queue, Redis's state; :class:`Store` itself;
* :mod:`~sca_worker.store.scripts`: the Lua scripts of the atomic operations.

Adding a Redis key family: a function in :mod:`~sca_worker.store.keys` and,
when no existing method fits, a method of :class:`Store`; then its caller.

The embedded default
--------------------
Without ``REDIS_URL`` (``sca serve``, the embedded runner) the same
:class:`Store` runs on fakeredis, a Redis implemented in this process
(:meth:`Store.in_process`): the same commands, transactions, Lua scripts
(through lupa), and streams with blocking reads.  Before,
an in-memory store reimplemented each feature a second time (four pairs of
twin classes), and only the Redis half ran the production scripts.

Measured with ``python scripts/embedded_store.py --jobs 40`` (it uses the API
only, so the same file runs on both versions), alternating runs before (the
in-memory twin, commit 784a898) and after (fakeredis), on a 2-core machine
shared with other work (load average 9 to 12): ranges over 3 to 5 runs each;
read the ratios, not the absolute figures.

========================================== =============== ===============
embedded default, through the API          in-memory twin  fakeredis
========================================== =============== ===============
baseball job, median latency               60-76 ms        94-140 ms
raw-data job (120 points, 4 runs), median  145-271 ms      241-345 ms
raw-data job (2,000 x 10, 20 runs), median 2.3-3.1 s       1.9-3.8 s
baseball jobs submitted together           11-19 /s        6-10 /s
one job record read (``get_job``), median  10 us           78 us
store calls per baseball job               131             167
========================================== =============== ===============

fakeredis encodes and parses each command as a socket would, and runs each
Lua script with a garbage collection of its interpreter after it: every
store call costs tens of microseconds more, a scripted update about a
millisecond.  (The calls per job grow because events, liveness and limits
now go through the store too; the in-memory twin skipped liveness.)  So a
toy job takes about twice as long and the embedded default finishes half as
many of them per second, while a job with real work (the 2,000-point
ensemble) is within the noise.  The embedded default is one process for one
user, where a few tens of milliseconds per job are not felt, and
throughput is what Redis mode (unchanged) is for.  In exchange there is one
implementation of every feature instead of two that drift, and the
embedded default runs the production scripts: the race tests
(``tests/integration/test_races.py``: identical jobs submitted together, a
job deleted while its twin is submitted, 30 rounds each) pass on it as on
Redis, as do the store's tests, run on both (``tests/worker/``).
"""

from __future__ import annotations

from collections.abc import Mapping

from ..config import resolve
from . import keys
from .base import ArtifactMissing
from .coordination import Store

__all__ = ["ArtifactMissing", "Store", "keys", "store_from_settings"]


def store_from_settings(settings: Mapping) -> Store:
    """The store on ``REDIS_URL``, or in this process when it is not set."""
    settings = resolve(settings)
    kwargs = {
        "ttl": settings["SCA_JOB_TTL"],
        "chunk_bytes": settings["SCA_CHUNK_BYTES"],
        "prefix": settings["SCA_KEY_PREFIX"],
    }
    if not settings["REDIS_URL"]:
        return Store.in_process(**kwargs)
    return Store.from_url(settings["REDIS_URL"], timeout=settings["SCA_REDIS_TIMEOUT"], **kwargs)
