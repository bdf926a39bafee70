"""The embedded default: the same stages in this process, on a thread pool.

With no ``REDIS_URL`` the API submits jobs here instead of to Celery.  A job
runs its stages in order on one pool thread, the ensemble's runs spread over
the cores from there (:func:`sca_worker.stages.ensemble_runs`); other jobs run
on the other threads.  Cancelling is cooperative:
:func:`sca_worker.stages.execute` skips every stage of a job that is no longer
active, so a cancelled job stops at the next stage or ensemble run.

The compiled kernels are warmed before the first job (:func:`sca.warm`,
unless ``SCA_WARM`` is off), on its thread: not while the process only
serves requests, whose latency a warm-up beside them would cost.

Webhooks of finished jobs are delivered by a
:class:`~sca_worker.webhooks.Deliverer` on threads of its own, never the job
threads, so a receiver that does not answer delays no job (see
:mod:`sca_worker.webhooks`).
"""

from __future__ import annotations

import logging
from concurrent.futures import Future, ThreadPoolExecutor

import sca

from . import planning, stages, webhooks
from .config import resolve
from .store import Store

log = logging.getLogger(__name__)


def run_job(store: Store, job_id: str) -> None:
    """Every stage a job still needs, in order (what the Celery chain does)."""
    steps = planning.plan(store, job_id)
    if steps is not None:
        stages.run_steps(store, job_id, steps)


class EmbeddedRunner:
    """Runs jobs on a thread pool of ``workers`` threads."""

    def __init__(self, store: Store, workers: int = 2, settings=None):
        self.store = store
        self.settings = resolve(settings or {})
        self.pool = ThreadPoolExecutor(
            max_workers=max(1, int(workers)), thread_name_prefix="sca-job"
        )
        self.futures: dict[str, Future] = {}
        self.deliverer = webhooks.Deliverer(store, self.settings)
        store.on_webhook = self.deliverer.wake  # its thread starts with the first webhook

    def submit(self, job_id: str, task_id: str | None = None) -> str:
        """Run the job in a thread of the pool; the id of its task (``task_id`` when given)."""
        future = self.pool.submit(self._run, job_id)
        self.futures[job_id] = future
        return task_id or f"embedded-{job_id}"

    def _run(self, job_id: str) -> None:
        try:  # planning and every stage fail the job themselves
            if self.settings["SCA_WARM"]:
                sca.warm()  # once per process, before its first job (a second waits)
            run_job(self.store, job_id)
        finally:
            self.futures.pop(job_id, None)
            self.store.forget_alive(job_id)  # no watchdog here prunes it

    def waiting(self) -> int:
        """Jobs submitted and waiting for a thread."""
        return sum(1 for f in list(self.futures.values()) if not (f.running() or f.done()))

    def revoke(self, job_id: str, task_ids=()) -> None:
        """Cancel a job: queued jobs never start; running ones stop at the next stage."""
        future = self.futures.get(job_id)
        if future is not None:
            future.cancel()

    def wait(self, job_id: str, timeout: float | None = None) -> None:
        """Block until a job's thread is done (tests)."""
        future = self.futures.get(job_id)
        if future is not None:
            future.result(timeout)

    def ping(self) -> bool:
        return True

    def shutdown(self) -> None:
        self.deliverer.stop()
        self.pool.shutdown(wait=False, cancel_futures=True)
