"""Which jobs use which artifacts, and deleting those no job uses any more.

Artifacts are content-addressed and shared by every job of the same input
(see :mod:`sca_worker.jobs`), so deleting a job must not delete what another job
still reads.  Every job is listed in the set ``refs:<h_input>`` when it is
created; every artifact a job uses derives from its input, so the jobs that
could share one of its artifacts are all in that set.  :func:`release`
deletes a job's artifacts that no other live job (one that exists and is not
cancelled) of the set also names.  Release and submission take one lock per
input (:func:`input_lock`, a Redis lock shared by every process), so a job
being submitted is either listed before a release reads the set, or sees the
artifacts already gone and writes them again; a job's record is created
before it is listed.

A stage that was running when its job was cancelled writes its artifact
after the API released the job's; :func:`sca_worker.stages.execute` calls
:func:`release` again once such a stage returns, so nothing is left behind.
"""

from __future__ import annotations

from .problems import store_full
from .store import Store, keys
from .store.keys import artifact_keys


def _refs(record) -> str:
    return keys.refs(record["hashes"]["input"])


def _names(record) -> set[str]:
    named = artifact_keys(record)
    names = {key for name, key in named.items() if name != "run"}  # runs: below
    runs = int(record.get("runs_total") or 0)  # counted at submission
    return names | {f"{named['run']}{i}" for i in range(runs)}


def track(store: Store, record) -> None:
    """List a new job among the users of its input (its record must exist first,
    or a concurrent :func:`release` takes it for a dead job)."""
    store.sadd(_refs(record), record["id"], store.ttl)


def forget(store: Store, record) -> None:
    """Undo a submission that Redis refused for lack of memory: unlist the job and
    delete its record and ids (deleting needs no memory; taking a lock would).
    Its input, shared by content, expires with its TTL."""
    store.srem(_refs(record), record["id"])
    store.delete(keys.element_ids(record["id"]))
    store.delete_job(record["id"])


def input_lock(store: Store, record):
    """The lock that makes :func:`track` plus the submitter's cache checks, and
    :func:`release`, atomic with respect to each other for one input."""
    return store.lock(_refs(record))


def release(store: Store, record) -> list[str]:
    """Delete the artifacts of ``record`` that no other live job uses; returns their names.

    A full Redis refuses the lock (a write) but not the deletions, which make
    room: they go ahead unlocked, as no submission can list itself meanwhile
    (:func:`track` is a write too).
    """
    try:
        with input_lock(store, record):
            return _release(store, record)
    except Exception as exc:
        if not store_full(exc):
            raise
        return _release(store, record)


def _release(store: Store, record) -> list[str]:
    refs = _refs(record)
    store.srem(refs, record["id"])
    keep: set[str] = set()
    for other_id in store.smembers(refs):
        other = store.get_job(other_id)
        if other is None:
            store.srem(refs, other_id)
        elif other.get("status") != "cancelled":
            keep |= _names(other)
    names = sorted(_names(record) - keep)
    names.append(keys.element_ids(record["id"]))
    store.delete(*names)
    return names
