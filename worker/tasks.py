"""Named Celery tasks: thin wrappers over :mod:`sca_worker.stages`.

Every task takes a job id and small JSON options, never arrays: the stages
read and write artifacts in the store.  ``sca.start`` (the one task the API
sends) looks at the cache and enqueues what is left as a chain

    chord(group(sca.ensemble_run x r), sca.ensemble_collect) | sca.balance
        | sca.spectrum | sca.iterate

(stages whose artifacts are cached are left out): a task per stage of the
core's table (:data:`sca.pipeline.TASKS`), named as above, or ``sca.stage``
with the stage's name for a stage without a name of its own.  Only the
chord's header (``sca.ensemble_run``) keeps its results; every other task
ignores them.  A task that finds its job cancelled or failed raises ``Ignore``,
which stops the rest of the chain.

A small job (at most ``SCA_SMALL_JOB_ELEMENTS`` elements, and no ensemble runs
to do: those fan out over the workers) runs what is left within ``sca.start``
instead (:func:`sca_worker.stages.run_steps`, as the embedded default does):
the same stages, events and timings, one Celery hop instead of four.  Its
heartbeat is ``sca.start``'s, so a lost worker's small job is taken over as any
other, from its cached stages; cancelling it revokes ``sca.start``.  A job for
the Dask cluster (``SCA_DASK_SCHEDULER``, see :mod:`sca_worker.on_dask`) runs
within ``sca.start`` too, its stages' work on the cluster.

A stage task of a key's job that finds the key holding its share of the
workers (``SCA_MAX_RUNNING_PER_KEY``) is sent again a moment later (see
:mod:`sca_worker.share`).

While Redis is full a task waits for room (:func:`sca_worker.capacity.with_room`)
and runs its stage again; after ``SCA_STORE_FULL_WAIT`` seconds its job fails
with the ``store-full`` problem, as does the job of a task whose next stage
could not be published for that long.
"""

from __future__ import annotations

import logging

from celery import chain, chord, group, signals
from celery.exceptions import Ignore

from . import on_dask, planning, share, stages
from .capacity import with_room
from .celery_app import app, get_store
from .problems import TRANSIENT, store_full

log = logging.getLogger(__name__)

#: Tries of a task while Redis restarts, counted apart from the fair-share
#: deferrals (Celery's own retry count holds both).
BLIP_TRIES = 60
#: The message header that carries that count from one try to the next.
BLIP_HEADER = "sca_blips"


def _after_blip(task, exc: BaseException):
    """The retry of ``task`` in two seconds, as Redis restarts; ``exc`` itself once
    :data:`BLIP_TRIES` such retries have been made, however often the task was
    deferred for its key's share (:mod:`sca_worker.share`)."""
    blips = int(getattr(task.request, BLIP_HEADER, None) or 0)
    if blips >= BLIP_TRIES:
        return exc
    return task.retry(
        exc=exc, countdown=2, max_retries=share.MAX_TRIES, headers={BLIP_HEADER: blips + 1}
    )


def _with_room(task, job_id: str, action, what: str):
    """``action()`` of a task, waiting while Redis is full; None once the job has
    failed for it (see :func:`sca_worker.capacity.with_room`)."""
    store = get_store(task.app)

    def give_up(exc):
        stages.fail_full(store, job_id, exc)

    return with_room(
        action, give_up, task.app.sca_settings["SCA_STORE_FULL_WAIT"], f"job {job_id}: {what}"
    )


def _run_stage(task, job_id: str, stage: str, *args) -> dict:
    store = get_store(task.app)
    task_id = task.request.id
    slot = share.Slot(store, job_id, task_id, task.app.sca_settings)
    try:
        taken = slot.take()
    except TRANSIENT as exc:  # Redis restarting: try again shortly
        raise _after_blip(task, exc) from None
    if not taken:  # the job's key has its share of the workers: others go first
        raise task.retry(countdown=slot.countdown, max_retries=share.MAX_TRIES)
    try:
        return _run_taken(task, store, job_id, stage, *args)
    finally:
        try:
            slot.release()
        except TRANSIENT:  # the lease lapses on its own
            pass


def _run_taken(task, store, job_id: str, stage: str, *args) -> dict:
    task_id = task.request.id

    def run():
        if task_id:
            store.add_task(job_id, task_id)
        return stages.execute(store, job_id, stage, *args)

    try:
        ok = _with_room(task, job_id, run, stage)
    except TRANSIENT as exc:  # Redis restarting: run the stage again shortly
        raise _after_blip(task, exc) from None
    finally:
        if task_id:
            try:
                store.remove_task(job_id, task_id)
            except TRANSIENT:
                pass
    if not ok:
        raise Ignore()
    return {"job_id": job_id, "stage": stage}


@app.task(name="sca.ensemble_run", bind=True)
def ensemble_run(self, job_id: str, index: int, run: dict) -> dict:
    """One clustering of the ensemble (``run`` = ``{algorithm, k, seed}``)."""
    return _run_stage(self, job_id, "ensemble", int(index), dict(run))


@app.task(name="sca.ensemble_collect", bind=True, ignore_result=True)
def ensemble_collect(self, job_id: str, total: int) -> dict:
    """Chord callback: the membership operator of the ``total`` runs."""
    return _run_stage(self, job_id, "ensemble_collect", int(total))


@app.task(name="sca.balance", bind=True, ignore_result=True)
def balance(self, job_id: str) -> dict:
    return _run_stage(self, job_id, "balancing")


@app.task(name="sca.spectrum", bind=True, ignore_result=True)
def spectrum(self, job_id: str) -> dict:
    return _run_stage(self, job_id, "spectral")


@app.task(name="sca.iterate", bind=True, ignore_result=True)
def iterate(self, job_id: str) -> dict:
    return _run_stage(self, job_id, "iteration")


@app.task(name="sca.stage", bind=True, ignore_result=True)
def run_stage(self, job_id: str, stage: str) -> dict:
    """Any other stage of the core's table (:data:`sca.pipeline.STAGES`)."""
    return _run_stage(self, job_id, str(stage))


#: The stages with a task of their own name (deployments route and watch these).
STAGE_TASKS = {"balancing": balance, "spectral": spectrum, "iteration": iterate}


def job_canvas(job_id: str, steps: dict):
    """The chain of signatures for the stages in ``steps`` (from :func:`planning.plan`)."""
    signatures = []
    for stage in steps["stages"]:
        if stage == "ensemble":
            runs = steps["runs"]
            header = group(ensemble_run.si(job_id, i, run) for i, run in enumerate(runs))
            signatures.append(chord(header, ensemble_collect.si(job_id, len(runs))))
        elif stage in STAGE_TASKS:
            signatures.append(STAGE_TASKS[stage].si(job_id))
        else:
            signatures.append(run_stage.si(job_id, stage))
    return chain(*signatures) if signatures else None


def task_name(stage: str) -> str:
    """The name of the task that runs ``stage`` of a big job."""
    if stage == "ensemble":
        return ensemble_run.name
    return STAGE_TASKS[stage].name if stage in STAGE_TASKS else f"{run_stage.name}({stage})"


def small(steps: dict, settings) -> bool:
    """Whether a planned job runs its stages within ``sca.start`` (see the module):
    a small one with no ensemble runs to do (those fan out over the workers)."""
    limit = settings["SCA_SMALL_JOB_ELEMENTS"]
    return (
        bool(steps["stages"])
        and "ensemble" not in steps["stages"]
        and 0 < steps.get("n", limit + 1) <= limit
    )


def _on_dask(store, job_id: str, steps: dict, task_id, held: list, settings) -> bool | None:
    """The job run on the Dask cluster (:mod:`sca_worker.on_dask`) when it goes there:
    True when it succeeded, False when it went no further, None when it does not go
    there (the caller runs it as any other job)."""
    record = steps.get("record")  # as planned (a cached result plans no stage)
    if record is None or not on_dask.wanted(record, steps, settings):
        return None
    if task_id:  # cancelling the job revokes this task, as for a small job
        store.add_task(job_id, task_id)
        held.append(task_id)
    return on_dask.run(store, job_id, settings)


@app.task(name="sca.start", bind=True, ignore_result=True)
def start(self, job_id: str) -> dict:
    """Plan a job against the cache and enqueue the stages it still needs, or run
    them here when the job is small."""
    store, task_id = get_store(self.app), self.request.id
    held: list[str] = []  # this task's id, once it runs the job's stages (cancelling revokes it)

    def plan_and_enqueue():  # planned afresh (new task ids) each time Redis refuses it
        steps = planning.plan(store, job_id)
        if steps is None:
            return None
        ran = _on_dask(store, job_id, steps, task_id, held, self.app.sca_settings)
        if ran is False:
            return None
        if ran:
            return steps
        if small(steps, self.app.sca_settings):
            log.info(
                "job %s: %s in %s (%d elements)",
                job_id,
                ", ".join(task_name(stage) for stage in steps["stages"]),
                self.name,
                steps["n"],
            )
            # Cancelling revokes the task the record names (the API's sca.start) and
            # those listed with the job: a takeover's sca.start lists itself.
            if task_id and steps["record"].get("task_id") != task_id:
                store.add_task(job_id, task_id)
                held.append(task_id)
            if not stages.run_steps(store, job_id, steps):
                return None
        else:
            canvas = job_canvas(job_id, steps)
            if canvas is not None:
                canvas.apply_async()
        return steps

    try:
        steps = _with_room(self, job_id, plan_and_enqueue, "planning")
    except TRANSIENT as exc:
        raise _after_blip(self, exc) from None
    finally:
        if held:
            try:
                store.remove_task(job_id, task_id)
            except TRANSIENT:
                pass
    if steps is None:
        raise Ignore()
    return {"job_id": job_id, "stages": steps["stages"]}


@signals.task_failure.connect
def _fail_job_of_full_store(sender=None, exception=None, args=None, kwargs=None, **extra):
    """A task that failed because Redis stayed full (publishing what comes next gave
    up) fails its job with the store-full problem, once Redis takes that write."""
    if not store_full(exception) or not getattr(sender, "name", "").startswith("sca."):
        return
    job_id = (kwargs or {}).get("job_id") or (args[0] if args else None)
    if isinstance(job_id, str):
        store = get_store(sender.app)
        _with_room(sender, job_id, lambda: stages.fail_full(store, job_id, exception), sender.name)
