"""Which jobs use which artifacts, and deleting those no job uses any more.

Artifacts are content-addressed and shared by every job that names them (see
:mod:`sca_worker.jobs`), so deleting a job must not delete what another job
still reads.  Each artifact is kept under one of the job's content hashes
(:func:`sca_worker.store.keys.shared_artifacts`), and every job is listed,
when it is created, in the references ``uses:<h>`` of each of its hashes (a
sorted set scored by when it was listed).  :func:`release` removes the job
from each and, in the same atomic step in Redis, deletes the artifacts of
every hash no job refers to any more: a reference count, with the same work
per job however many identical jobs share its input (before, release read
every other job of the input under one lock per input: seconds per delete
with thousands of twins, and a lock that timed out into 500s).

A submission lists its job (:func:`track`) before it looks in the cache or
stores its input, so a concurrent release either sees the reference and
keeps the artifacts, or deleted them before and the submission writes them
again.  A job that expires instead of being deleted never releases: its
references are dropped by later releases once older than twice
``SCA_JOB_TTL`` (past which no job record remains, as for the listing's
index), and until then its artifacts expire with their own TTL.

A job run on Dask also writes npy stacks outside Redis (its labels, balancing
vector and per-element figures, :mod:`sca_worker.on_dask`): their directory is
listed in the hash ``written`` with the artifacts that read it (:func:`wrote`):
its job's result, and its P while P's state names it (identical balancings
share one P, which names the stacks of the job that wrote it last).
:func:`sweep` deletes every listed directory that none of them reads any
more.  :func:`release` sweeps when it deletes such an artifact (a job
deleted, the last job of a result released), and each worker's watchdog
sweeps every round (:mod:`sca_worker.heartbeat`), which deletes the stacks of
jobs that expired.  A directory that cannot be deleted stays listed for the
next sweep.

A stage that was running when its job was cancelled writes its artifact
after the API released the job's; :func:`sca_worker.stages.execute` calls
:func:`release` again once such a stage returns, which deletes it unless
another job refers to it.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time

from .inputs import is_stored
from .store import ArtifactMissing, Store, keys
from .store.keys import artifact_keys, shared_artifacts

log = logging.getLogger(__name__)

#: The artifacts whose release may leave a written stack unread (:func:`sweep`).
READERS = ("P:", "result:")


def _refs(record) -> dict[str, list[str]]:
    """The sets of references of a job's content hashes, each with its artifacts."""
    return {keys.refs(h): list(named.values()) for h, named in shared_artifacts(record).items()}


def _own(record) -> list[str]:
    """The artifacts that belong to the job alone: its ensemble's runs and its ids."""
    runs = int(record.get("runs_total") or 0)  # counted at submission
    prefix = artifact_keys(record)["run"]
    return [*(f"{prefix}{i}" for i in range(runs)), keys.element_ids(record["id"])]


def _keep(store: Store) -> float:
    """References older than this are of jobs that expired without a release."""
    return 2 * store.ttl


def track(store: Store, record) -> None:
    """List a new job among the users of its artifacts (before the submission
    looks in the cache or stores its input)."""
    store.refer(record["id"], _refs(record), time.time(), int(_keep(store)))


def forget(store: Store, record) -> None:
    """Undo a submission that Redis refused for lack of memory: unlist the job and
    delete its record and ids (all removals, which a full Redis takes)."""
    release(store, record)
    store.forget_alive(record["id"])
    store.delete_job(record["id"])


def release(store: Store, record) -> list[str]:
    """Drop the job's references and delete the artifacts no job refers to any
    more, and the job's own; returns the names deleted.

    Only removals: a full Redis takes them, and they make room.
    """
    deleted = store.unrefer(record["id"], _refs(record), time.time() - _keep(store))
    own = _own(record)
    store.delete(*own)
    if any(name.startswith(READERS) for name in deleted):
        sweep(store)
    return deleted + own


def wrote(store: Store, directory: str, P: str, result: str) -> None:
    """List ``directory``, written for a job, with the names of its P and result
    (after they are stored: a sweep before would find neither and delete it)."""
    store.hset_text(keys.written(), directory, json.dumps({"P": P, "result": result}))


def _read(store: Store, directory: str, names: dict) -> bool:
    """Whether the result or the P listed with ``directory`` still reads it."""
    if store.has(names["result"]):
        return True
    try:
        state = store.load_arrays(names["P"])
    except ArtifactMissing:
        return False
    return is_stored(state) and os.path.dirname(str(state["scale"])) == directory


def sweep(store: Store) -> list[str]:
    """Delete the listed directories that no artifact reads any more (their jobs
    deleted or expired); returns those deleted."""
    gone = []
    for directory, names in store.htexts(keys.written()).items():
        if _read(store, directory, json.loads(names)):
            continue
        shutil.rmtree(directory, ignore_errors=True)
        if os.path.exists(directory):
            log.warning("could not delete the written stacks at %s; next sweep", directory)
            continue
        store.hdel(keys.written(), directory)
        gone.append(directory)
    return gone
