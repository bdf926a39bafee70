"""Independent tasks spread over the cores: worker processes where they may run, else threads.

The ensemble's k-means runs (:mod:`sca.ensemble`) and the k rule's reference
data sets (:mod:`sca.reference`) are independent tasks, each on one BLAS and
one OpenMP thread.  scikit-learn's k-means spends much of a small run in
Python (parameter checks, the k-means++ seeding's calls, one per centre):
threads of one process then take turns at the GIL, and a 1,000-row ensemble
spread over two threads cost more CPU and more wall time than one thread
alone.  Worker processes (joblib's loky, reused from job to job) each have a
GIL of their own; joblib gives each one BLAS/OpenMP thread per core it owns
(one here) and shares arrays above a megabyte with them by a memory map.

Starting the workers costs about as much as a 1,000 x 20 ensemble (each
imports scikit-learn): tasks of less work (:data:`PROCESS_MIN_WORK`) run on
the calling thread until a larger job of the process has started them, and
after that on them.  Processes cannot always be started: a daemonic process
(a Celery prefork pool's child) may have no children; there the tasks go to
threads.
"""

from __future__ import annotations

import multiprocessing
import os
import tempfile
from concurrent.futures import ThreadPoolExecutor, as_completed

import numpy as np

from .errors import SCAError

#: Chunks of tasks per worker process: several, so that a worker that finishes early
#: (the machine's other load) takes another; each chunk is one message each way.
CHUNKS_PER_WORKER = 4
#: Least work (an estimate, see :func:`spread`) for which worker processes are
#: started; once started they take every task of more than one worker.
PROCESS_MIN_WORK = 2e7

_started: set[int] = set()  # the processes (ids) whose workers have been started


def workers(n_jobs: int | None) -> int:
    """Workers for the tasks: ``n_jobs``, or the cores this process may use."""
    if n_jobs is not None:
        if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)) or n_jobs < 1:
            raise SCAError(f"n_jobs must be a positive integer or None, got {n_jobs!r}", "n_jobs")
        return int(n_jobs)
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def processes_allowed() -> bool:
    """Whether this process may start worker processes: not a daemonic one, and
    with a joblib (scikit-learn's) that gives results as they come (1.3 on)."""
    import joblib

    version = tuple(int(part) for part in joblib.__version__.split(".")[:2] if part.isdigit())
    return not multiprocessing.current_process().daemon and version >= (1, 3)


def _chunk(fn, items: list, stop: str) -> tuple:
    """``(results, None)``, ``(None, the exception)`` of the first task that
    raised, or ``(None, None)`` when the call was stopped before this chunk began
    (the file ``stop`` exists)."""
    if os.path.exists(stop):
        return None, None
    try:
        return [fn(*item) for item in items], None
    except Exception as exc:  # noqa: BLE001 - raised on the calling thread (see _on_processes)
        return None, exc


def spread(
    fn, items: list, n_jobs: int | None = None, progress=None, work: float = float("inf")
) -> list:
    """``fn(*item)`` for each of ``items``, in their order, over ``n_jobs`` workers.

    Worker processes where this process may start them (:func:`processes_allowed`),
    ``fn`` then being importable or picklable, its items and results picklable;
    else threads.  One worker, one item, or less ``work`` than
    :data:`PROCESS_MIN_WORK` while no worker process has been started: this
    thread (one scikit-learn run holds the GIL too often for threads to gain).

    Parameters
    ----------
    fn : callable
        The task; it sets its own thread limits (one BLAS/OpenMP thread).
    items : list of tuple
        Each task's arguments.
    n_jobs : int, optional
        Workers; None for one per core this process may use.  Worker
        processes are never more than those cores (one pool, which every
        call shares): a larger ``n_jobs`` queues its tasks for them.
    progress : callable, optional
        ``progress(done, total)``, called on this thread as tasks finish (with
        processes, a chunk of tasks at a time); if it raises, the tasks not yet
        started are dropped.
    work : float, optional
        All the tasks' work, as the ensemble counts it: rows x columns x the
        sum of the runs' k (:func:`sca.ensemble.ensemble_work`).

    Returns
    -------
    list
        ``fn(*item)`` for each item, in the order of ``items``.

    Raises
    ------
    SCAError
        With ``field="n_jobs"`` when ``n_jobs`` is not a positive integer or None.
    """
    count = min(workers(n_jobs), len(items))
    total = len(items)
    started = os.getpid() in _started
    if count <= 1 or (work < PROCESS_MIN_WORK and not started):
        results = []
        for item in items:
            results.append(fn(*item))
            if progress is not None:
                progress(len(results), total)
        return results
    if processes_allowed():
        _started.add(os.getpid())
        return _on_processes(fn, items, count, progress)
    return _on_threads(fn, items, count, progress)


def _on_processes(fn, items: list, count: int, progress) -> list:
    """Interleaved chunks (item ``j`` in chunk ``j % chunks``), so that tasks
    that grow along ``items`` (the ensemble's k) cost each chunk alike; at most
    ``count`` of them under way at once, on the process's one pool of a worker
    per core.

    Every call shares that pool (jobs on several threads of the embedded
    default), so no call may change or stop it.  It keeps its size whatever
    ``count`` is: loky resizes its reused pool only once no call is using it,
    and a call of another size beside a running one (one spreading four
    references, the other sixteen runs, on a machine of more cores than four)
    hung both.  And a call never aborts joblib's generator, which kills the
    pool's workers under every other call: when a task raises or
    ``progress`` does (a cancelled job), the chunks not yet begun find the
    call's stop file and return at once, the generator is drained, and the
    exception is raised then.
    """
    from joblib import Parallel, delayed

    chunks = min(len(items), count * CHUNKS_PER_WORKER)
    parts = [items[c::chunks] for c in range(chunks)]
    results: list = [None] * len(items)
    done, failure = 0, None
    with tempfile.TemporaryDirectory(prefix="sca-spread-") as folder:
        stop = os.path.join(folder, "stop")
        outputs = Parallel(
            n_jobs=workers(None),
            pre_dispatch=count,
            backend="loky",
            batch_size=1,
            return_as="generator",
        )(delayed(_chunk)(fn, part, stop) for part in parts)
        for c, (output, error) in enumerate(outputs):
            if failure is None and error is not None:
                failure = error
            elif failure is None and output is not None:
                results[c::chunks] = output
                done += len(output)
                try:
                    if progress is not None:
                        for finished in range(done - len(output) + 1, done + 1):
                            progress(finished, len(items))
                except BaseException as exc:  # noqa: BLE001 - raised once the pool is free
                    failure = exc
            if failure is not None and not os.path.exists(stop):
                open(stop, "w").close()
    if failure is not None:
        raise failure
    return results


def _on_threads(fn, items: list, count: int, progress) -> list:
    with ThreadPoolExecutor(count, thread_name_prefix="sca-pool") as pool:
        futures = [pool.submit(fn, *item) for item in items]
        try:
            for done, future in enumerate(as_completed(futures), 1):
                future.result()
                if progress is not None:
                    progress(done, len(items))
        except BaseException:
            for future in futures:
                future.cancel()
            raise
        return [future.result() for future in futures]
