"""The stages of a job as plain functions over a store.

The ensemble's runs and their collection are the worker's own (one task per
run); every other stage is the core's (:data:`sca.pipeline.STAGES`): it
reads its artifacts from the store (:class:`JobArtifacts`), runs the core's
entry and saves what it keeps (:func:`save_kept`).  The Celery tasks
(:mod:`sca_worker.tasks`) and the embedded runner (:mod:`sca_worker.embedded`)
both call :func:`execute`, which adds what every stage needs: it skips jobs
no longer active, marks the stage as running, times it and turns any failure
into a failed job with a problem+json ``error``.  Stages write content-addressed artifacts, so
running one twice is harmless.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from functools import partial

import numpy as np

# The core loads scikit-learn on first use (so `sca --help` stays fast); a
# worker loads it at start-up rather than inside its first job.
import sklearn.cluster  # noqa: F401
import sklearn.decomposition  # noqa: F401

import sca
from sca.ensemble import fit_runs
from sca.inputs import Scaling

from . import events, inputs, metrics
from .cleanup import release
from .jobs import ACTIVE, jsonable, now
from .problems import TRANSIENT, problem_for, store_full
from .store import Store
from .store.keys import artifact_keys

log = logging.getLogger(__name__)

#: The last stage of every job: it finishes the job.
LAST = sca.pipeline.TASKS[-1]


#: What the core's stages keep, in order (``P``, ``balance``, ``spectrum``, ``result``).
KEPT = tuple(name for stage in sca.pipeline.STAGES for name in stage.keeps)
#: Kept artifacts that are operators, stored as arrays; the others are JSON.
OPERATORS = ("P",)


# -- the stages ----------------------------------------------------------------------------
def job_scaling(store: Store, record: dict) -> Scaling:
    """The fitted scale of a data job (:class:`sca.inputs.Scaling`): fitted once on the
    job's data and kept, so the runs and the job's new elements share it."""
    name = artifact_keys(record)["scaling"]
    if store.has(name):
        return Scaling.from_arrays(store.load_arrays(name))
    X = store.load_arrays(artifact_keys(record)["input"])["X"]
    fitted = inputs.scaling(X, record["source"])
    store.save_arrays(name, fitted.arrays())
    return fitted


def scaled_data(store: Store, record: dict) -> np.ndarray:
    """A data job's X as its ensemble or SNN sees it (scaled by :func:`job_scaling`)."""
    X = store.load_arrays(artifact_keys(record)["input"])["X"]
    return job_scaling(store, record).transform(X)


def ensemble_run(store: Store, record: dict, index: int, run: dict) -> None:
    """One clustering of the ensemble (a Celery task's); its labels and model
    (k-means centres, NMF components) become an artifact."""
    keys = artifact_keys(record)
    name = f"{keys['run']}{index}"
    if store.has(keys["op"]):  # a late run of an ensemble already collected (takeover)
        return
    if not store.has(name):
        _save_run(store, name, run, *sca.ensemble_model(scaled_data(store, record), run))
    store.incr_job(record["id"], "runs_done")


class _Stopped(Exception):
    """The job left the active states while its runs were under way."""


def ensemble_runs(store: Store, record: dict, runs: list) -> None:
    """Every clustering of the ensemble in this process (the embedded default's
    :func:`ensemble_run`), spread over its cores as the library spreads them
    (:func:`sca.ensemble.fit_runs`): one job's ensemble uses every core, as its
    runs do as tasks on Celery's workers.  Progress is counted as runs finish,
    and a job that stops being active drops the runs not yet started."""
    keys = artifact_keys(record)
    if store.has(keys["op"]):  # an identical job collected the same ensemble meanwhile
        return
    job_id = record["id"]
    names = [f"{keys['run']}{index}" for index in range(len(runs))]
    present = store.existing(*names)
    todo = [index for index, name in enumerate(names) if name not in present]
    if len(todo) < len(runs):
        events.runs_done(store, job_id, len(runs) - len(todo))
    if not todo:
        return

    def finished(done: int, total: int) -> None:
        current = events.runs_done(store, job_id)
        if done < total and (current is None or current["status"] not in ACTIVE):
            raise _Stopped

    try:
        fitted = fit_runs(scaled_data(store, record), [runs[i] for i in todo], progress=finished)
    except _Stopped:
        return
    for index, (labels, model) in zip(todo, fitted):
        _save_run(store, names[index], runs[index], labels, model)


def _save_run(store: Store, name: str, run: dict, labels, model) -> None:
    store.save_arrays(
        name, {"labels": labels, "model": model, "algorithm": np.array(run["algorithm"])}
    )


def ensemble_collect(store: Store, record: dict, total: int) -> None:
    """The chord's callback: the membership operator S = H H^T of all runs, and the
    runs' models for placing new elements (:func:`save_models`)."""
    keys = artifact_keys(record)
    names = [f"{keys['run']}{i}" for i in range(total)]
    if not store.has(keys["op"]):  # an identical job may have collected the same ensemble
        runs = [store.load_arrays(name) for name in names]
        labels = np.column_stack([run["labels"] for run in runs])
        save_models(store, keys["models"], labels, runs)  # before op: op means both exist
        store.save_arrays(keys["op"], sca.operator_state(sca.membership_operator(labels)))
    store.delete(*names)
    # Every run is in op now.  A takeover that planned before op appeared has reset
    # the count, and its runs return early on op without counting: set it here.
    store.update_job(record["id"], {"runs_done": total}, expect=ACTIVE)


def save_models(store: Store, name: str, labels, runs: list) -> None:
    """What new elements need of the ensemble (:func:`sca.newrows.ensemble_state`)."""
    models, groups = sca.ensemble_models.stacked_models(run["model"] for run in runs)
    algorithms = [run["algorithm"] for run in runs]
    store.save_arrays(name, sca.ensemble_state(labels, models, groups, algorithms))


def source_operator(store: Store, record: dict):
    keys = artifact_keys(record)
    if "ensemble" in record["stages"]:
        return sca.operator_from_state(store.load_arrays(keys["op"]))
    arrays = store.load_arrays(keys["input"])
    fitted = job_scaling(store, record) if record["kind"] == "data" else None
    return inputs.build_operator(record["kind"], arrays, record["source"], fitted)


def load_balanced(store: Store, record: dict):
    """The stored balanced operator P of a job (``P.unscaled()`` is S)."""
    return load_kept(store, record, "P")


#: How a job's artifacts that no stage of the core makes are read.
LOADERS: dict[str, Callable] = {
    "S": lambda store, record: source_operator(store, record),
    "source": lambda store, record: record["source"] if record["kind"] == "data" else None,
    "scaled": lambda store, record: scaled_data(store, record),
}


def load_kept(store: Store, record: dict, name: str):
    """An artifact a stage of the core kept (:data:`KEPT`)."""
    key = artifact_keys(record)[name]
    if name in OPERATORS:
        state = store.load_arrays(key)
        if inputs.is_stored(state):  # a job on Dask: P names its files (labels, D)
            return inputs.stored_operator(state)
        return sca.operator_from_state(state)
    return store.load_json(key)


def save_kept(store: Store, record: dict, name: str, value):
    """Store an artifact a stage of the core keeps, for the stages after it; the
    value as they read it back (a JSON artifact through JSON)."""
    key = artifact_keys(record)[name]
    if name in OPERATORS:
        store.save_arrays(key, sca.operator_state(value))
        return value
    text = json.dumps(jsonable(value), separators=(",", ":"))
    store.save_bytes(key, text.encode())
    return json.loads(text)


class JobArtifacts(dict):
    """A job's artifacts, each loaded from the store when a stage first reads it."""

    def __init__(self, store: Store, record: dict):
        super().__init__()
        self.store, self.record = store, record

    def __missing__(self, name: str):
        load = LOADERS.get(name)
        value = (
            load_kept(self.store, self.record, name)
            if load is None
            else load(self.store, self.record)
        )
        self[name] = value
        return value


def run_stage(store: Store, record: dict, task: str, artifacts: JobArtifacts | None = None) -> None:
    """The core's stage ``task`` and those within it (:func:`sca.pipeline.parts`) on
    the job's artifacts; what they keep is saved (:func:`save_kept`).  Given
    ``artifacts`` (of the same job), it reads them and adds what it makes, as
    the stages after it would read it back from the store."""
    artifacts = JobArtifacts(store, record) if artifacts is None else artifacts
    saved = {}
    for stage in sca.pipeline.parts(task):
        made = stage.run(artifacts, stage.read(record["options"]))
        artifacts.update(made)
        for name in stage.keeps:
            saved[name] = save_kept(store, record, name, made[name])
    artifacts.update(saved)


#: The core's stages (run by :func:`run_stage`).
TASK_SET = frozenset(sca.pipeline.TASKS)
STAGE_FUNCTIONS: dict[str, Callable[..., None]] = {
    "ensemble": ensemble_run,
    "ensemble_runs": ensemble_runs,
    "ensemble_collect": ensemble_collect,
    **{task: partial(run_stage, task=task) for task in sca.pipeline.TASKS},
}


def run_steps(store: Store, job_id: str, steps: dict) -> bool:
    """Every stage of ``steps`` (from :func:`sca_worker.planning.plan`) in order,
    in this thread: the ensemble's runs, spread over this process's cores
    (:func:`ensemble_runs`), then their collection, then the core's stages (what
    the Celery chain does over several tasks).  Each stage starts
    from the record the one before read back, and reads the artifacts the ones
    before made from memory.  False when the job went no further (cancelled,
    failed or gone)."""
    record = steps.get("record") or store.get_job(job_id)
    artifacts = None if record is None else JobArtifacts(store, record)
    for stage in steps["stages"]:
        if stage == "ensemble":
            record = _execute(store, record, "ensemble_runs", steps["runs"])
            record = _execute(store, record, "ensemble_collect", len(steps["runs"]))
        else:
            record = _execute(store, record, stage, artifacts=artifacts)
        if record is None:
            return False
    return True


# -- running a stage -----------------------------------------------------------------------
def fail(store: Store, job_id: str, problem: dict) -> bool:
    """End an active job as failed with ``problem`` (see :mod:`sca_worker.problems`)."""
    failed = store.update_job(
        job_id, {"status": "failed", "error": problem, "updated": now()}, expect=ACTIVE
    )
    if failed:
        events.finished(store, job_id, "failed")
    return failed


def fail_full(store: Store, job_id: str, exc: BaseException) -> bool:
    """End an active job as failed because Redis stayed full (``exc`` says so)."""
    record = store.get_job(job_id) or {}
    return fail(store, job_id, problem_for(exc, record.get("stage")))


def stage_started(store: Store, job_id: str, stage: str, record: dict | None = None) -> dict | None:
    """Record ``stage`` as running (a sign of life) and emit its started event once
    per job and stage, however many tasks run it; the job's record after, None
    when the job is no longer active.  One round trip when the job's ``record``
    is given (the event, made from it, goes with the update), else two."""
    fields = {"status": "running", "stage": stage, "updated": now()}
    event = None
    if record is not None:
        event = ("stage", events.data("stage", {**record, **fields}, stage=stage, state="started"))
    begun = store.update_and_get(
        job_id,
        fields,
        expect=ACTIVE,
        alive=True,
        count=f"started:{stage}",
        unless_same="stage",
        event=event,
    )
    if begun is None:
        return None
    if begun[0] == 1 and event is None:
        events.emit(store, job_id, "stage", begun[1], stage=stage, state="started")
    return begun[1]


def stage_finished(
    store: Store, job_id: str, stage: str, elapsed: float, record: dict | None = None
) -> dict | None:
    """Record ``stage``'s seconds and metric (neither worth waiting for room in a
    full Redis) and emit its done event; the job's record after, None if gone.

    With the job's ``record`` as the stage began, a stage of the core's emits
    its event in the same round trip (made from that record and the seconds,
    appended only while the job is still as running as it was).
    """
    timing = f"t:{events.public_stage(stage)}"
    event = None
    if record is not None and stage in sca.pipeline.TASKS:
        after = {**record, timing: float(record.get(timing) or 0.0) + elapsed}
        done = events.data("stage", after, **events.finished_fields(stage, after))
        event = ("stage", done, record["status"])
    try:
        current = store.incr_and_get(
            job_id,
            timing,
            elapsed,
            *metrics.observation("stage", stage, elapsed),
            event=event,
        )
    except Exception as exc:
        if not store_full(exc):
            raise
        current, event = store.get_job(job_id), None
    if current is not None and event is None:
        events.stage_done(store, job_id, stage, current)
    return current


def execute(store: Store, job_id: str, stage: str, *args) -> bool:
    """Run one stage function of an active job; False when the job should go no further."""
    return _execute(store, store.get_job(job_id), stage, *args) is not None


def _execute(
    store: Store, record: dict | None, stage: str, *args, artifacts: JobArtifacts | None = None
) -> dict | None:
    """:func:`execute` from the job's ``record``; the record as the stage left it,
    None when the job should go no further.  A stage of the core's reads
    ``artifacts`` when given (those the stages before it in this thread made).

    The job's own writes around the stage, its events among them, go in two
    round trips, one before and one after it (:meth:`Store.update_and_get`,
    :meth:`Store.incr_and_get`), and its success in one.
    """
    if record is None or record["status"] not in ACTIVE:
        return None
    job_id = record["id"]
    public_stage = events.public_stage(stage)
    begun = stage_started(store, job_id, public_stage, record)
    if begun is None:
        return None
    start = time.perf_counter()
    current: dict | None = None
    try:
        shared = {"artifacts": artifacts} if artifacts is not None and stage in TASK_SET else {}
        STAGE_FUNCTIONS[stage](store, record, *args, **shared)
    except Exception as exc:  # every failure ends the job with a problem, not a traceback
        if isinstance(exc, TRANSIENT) or store_full(exc):
            raise  # Redis away or full for a while: the task tries again; the job goes on
        if not isinstance(exc, sca.SCAError):
            log.exception("job %s: stage %s failed", job_id, stage)
        fail(store, job_id, problem_for(exc, public_stage))
        return None
    finally:
        current = stage_finished(store, job_id, stage, time.perf_counter() - start, begun)
    if stage == LAST and current is not None:  # succeeded once its timing is recorded
        fields = {"status": "succeeded", "updated": now()}
        after = {**current, **fields}
        done = store.update_and_get(
            job_id, fields, expect=ACTIVE, event=("succeeded", events.data("succeeded", after))
        )
        if done is None:  # cancelled or failed meanwhile
            current = store.get_job(job_id)
        else:
            current = done[1]
            events.finished(store, job_id, "succeeded", current, recorded=True)
    if current is None or current["status"] == "cancelled":  # drop what it wrote
        release(store, current or record)
        return None
    return current
