"""The store: every Redis feature of the service behind one interface.

The API, the Celery workers and the embedded default keep everything in one
:class:`Store` (artifacts and JSON values, job records, their tasks and
events, idempotency values, sorted indexes, counters, locks, liveness,
per-key limits, the broker's queue depth, Redis's state).  Nothing outside
this package touches the Redis client, and every key's name comes from
:mod:`sca_worker.store.keys`, one function per family.  The modules:

* :mod:`~sca_worker.store.keys`: the names of the keys;
* :mod:`~sca_worker.store.base`: the connection, artifacts (chunked ``.npz``
  and JSON), plain values, sets and locks;
* :mod:`~sca_worker.store.records`: job records, tasks and events, sorted
  indexes, counter hashes, the metrics' census;
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
(through lupa), streams with blocking reads, and redis-py's locks.  Before,
an in-memory store reimplemented each feature a second time (four pairs of
twin classes), and only the Redis half ran the production scripts.

Measured with ``python scripts/embedded_store.py --jobs 60`` (a 2-core machine
shared with other work: read the ratios, not the absolute figures), before
(the in-memory twin, commit 784a898) and after (fakeredis):

======================================== =============== ===============
embedded default, through the API        in-memory twin  fakeredis
======================================== =============== ===============
baseball job, median latency             60-72 ms        102-125 ms
raw-data job (120 points, 4 runs)        145-196 ms      266-288 ms
raw-data job (2,000 x 10, 20 runs)       2.34 s          2.74 s
baseball jobs submitted together         15.5-17.8 /s    7.4-10.8 /s
======================================== =============== ===============

fakeredis costs a fixed ~0.3-0.5 ms per command (it encodes and parses
each one as a socket would), about 100 commands per small job: it doubles
the latency of a toy job and adds ~15 % to a job with real work.  The
embedded default is one process for one user; a tenth of a second per job
is not felt there, and throughput is what Redis mode (unchanged) is for.
In exchange there is one implementation of every feature, and the embedded
race tests (``tests/integration/test_races.py``: identical jobs submitted
together, a job deleted while its twin is submitted, 30 rounds each) run the
production scripts and locks, and pass.
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
