"""Planning a job: which stages it still needs, given what the cache holds.

A job's artifacts are content-addressed (:func:`sca_worker.store.keys.artifact_keys`):
a cached result finishes the job here (:func:`cache_hit`); otherwise the core's
stages with a stored artifact missing, and those that read what a needed stage
makes again, are run (:func:`needed`), after the ensemble when its labels are
not stored.  The Celery tasks (:mod:`sca_worker.tasks`) and the embedded runner
(:mod:`sca_worker.embedded`) both start a job with :func:`plan`.
"""

from __future__ import annotations

import logging

import sca

from . import events
from .jobs import ACTIVE, now
from .problems import TRANSIENT, problem_for, store_full
from .stages import KEPT, LAST, fail, job_scaling
from .store import Store
from .store.keys import artifact_keys

log = logging.getLogger(__name__)


def cache_hit(
    store: Store, record: dict, present: set | None = None, touched: bool = False
) -> dict | None:
    """The fields that finish a job whose result is cached (None when it is not);
    ``present``, when given, holds the artifacts known to exist.

    A hit restarts the TTL of the result and of what queries on it read (unless
    the caller did: ``touched``).
    """
    keys = artifact_keys(record)
    if not (keys["result"] in present if present is not None else store.has(keys["result"])):
        return None
    if not touched:
        store.touch(*(keys[name] for name in KEPT), keys["input"], keys["models"], keys["scaling"])
    return {
        "status": "succeeded",
        "stage": LAST,
        "cached": True,
        "runs_done": record["runs_total"],
        "updated": now(),
    }


def plan(store: Store, job_id: str) -> dict | None:
    """The stages a job still needs, given what the cache holds.

    Returns ``{"stages": [...], "runs": [run descriptors], "n": elements,
    "record": the job's record as planned}``
    (``{"stages": [], "runs": []}`` when the result is cached: the job is then
    finished here), or None when the job is gone, no longer active, or failed
    here (planning failed).
    """
    record = store.get_job(job_id)
    if record is None or record["status"] not in ACTIVE:
        return None
    try:
        return _plan(store, record)
    except Exception as exc:  # the job fails with a problem rather than stay queued
        if isinstance(exc, TRANSIENT) or store_full(exc):
            raise  # Redis away or full for a while: the caller tries again
        if not isinstance(exc, sca.SCAError):
            log.exception("job %s: planning failed", job_id)
        fail(store, job_id, problem_for(exc, record["stages"][0]))
        return None


def _plan(store: Store, record: dict) -> dict:
    job_id, keys = record["id"], artifact_keys(record)
    # What exists, its TTL restarted (a hit's, or what the stages will read), in one trip.
    present = store.touch(
        keys["input"], keys["op"], *(keys[name] for name in KEPT), keys["models"], keys["scaling"]
    )
    hit = cache_hit(store, record, present, touched=True)
    if hit is not None:
        if store.update_job(job_id, hit, expect=ACTIVE):
            events.finished(store, job_id, "succeeded")
        return {"stages": [], "runs": []}
    stages = needed(store, record, present)
    need_ensemble = (
        "S" in _needs(stages) and "ensemble" in record["stages"] and keys["op"] not in present
    )
    stages = (["ensemble"] if need_ensemble else []) + stages
    if "S" in _needs(stages) and record["kind"] == "data":
        job_scaling(store, record)  # once, before the runs that read it
    runs = []
    if need_ensemble:
        source = record["source"]
        runs = sca.ensemble_plan(source["ensemble"], source.get("ensemble_seed", 0))
    if record["runs_total"]:  # runs still to do, or all of them cached
        done = {"runs_done": 0 if need_ensemble else record["runs_total"]}
        store.update_job(job_id, done)
        record = {**record, **done}
    return {"stages": stages, "runs": runs, "n": int(record["n"]), "record": record}


def _needs(tasks) -> set:
    """The artifacts that the core's stages run by ``tasks`` read."""
    return {name for task in tasks for stage in sca.pipeline.parts(task) for name in stage.needs}


def needed(store: Store, record: dict, present: set | None = None) -> list[str]:
    """The core's stages a job must run: those with a stored artifact missing,
    and those that read what a needed stage makes again (``present``, when
    given, holds the artifacts known to exist)."""
    keys, tasks = artifact_keys(record), []
    if present is None:
        present = store.existing(*(keys[name] for name in KEPT))
    remade: set[str] = set()
    for task in sca.pipeline.TASKS:
        entries = sca.pipeline.parts(task)
        makes = {name for stage in entries for name in stage.makes}
        missing = any(keys[name] not in present for stage in entries for name in stage.keeps)
        if missing or remade & _needs([task]):
            tasks.append(task)
            remade |= makes
    return tasks
