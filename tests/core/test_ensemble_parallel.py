"""Ensembles spread over worker processes (threads where none may start), one
BLAS/OpenMP thread per run, and k-means runs fitted on a sample of the rows of
large data."""

import multiprocessing
import os
import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score
from threadpoolctl import OpenBLASController

import sca
import sca.ensemble
import sca.ensemble_spec
import sca.operators.threads
import sca.pool
from sca.operators.threads import one_blas_thread, single_threaded, threadpools

SPEC = [{"algorithm": "kmeans", "k": [2, 3, 4], "runs": 3}, {"algorithm": "nmf", "k": 2, "runs": 2}]


def _threads(user_api: str) -> set[int]:
    return {lib.num_threads for lib in threadpools().select(user_api=user_api).lib_controllers}


@pytest.fixture(scope="module")
def blobs():
    X, truth = make_blobs(n_samples=600, n_features=5, centers=4, cluster_std=0.5, random_state=0)
    return X - X.min(), truth  # nonnegative, for the NMF runs


def test_parallel_runs_give_the_labels_of_one_worker(blobs, monkeypatch):
    X, _ = blobs
    monkeypatch.setattr(sca.pool, "PROCESS_MIN_WORK", 0)  # on worker processes
    one = sca.ensemble_labels(X, SPEC, seed=5, n_jobs=1)
    assert np.array_equal(sca.ensemble_labels(X, SPEC, seed=5, n_jobs=2), one)
    assert np.array_equal(sca.ensemble_labels(X, SPEC, seed=5), one)
    fit, fit_one = (
        sca.ensemble_fit(X, SPEC, seed=5, n_jobs=2),
        sca.ensemble_fit(X, SPEC, 5, n_jobs=1),
    )
    assert np.array_equal(fit["labels"], one)
    for key in ("models", "groups", "algorithms"):
        assert np.array_equal(fit[key], fit_one[key])


def test_the_worker_s_runs_one_by_one_give_the_ensemble_s_labels(blobs):
    X, _ = blobs
    plan = sca.ensemble_plan(SPEC, seed=5)
    runs = np.column_stack([sca.ensemble_model(X, run)[0] for run in plan])
    assert np.array_equal(runs, sca.ensemble_labels(X, SPEC, seed=5, n_jobs=2))


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_progress_counts_every_run_on_the_calling_thread(blobs, n_jobs):
    calls = []
    caller = threading.get_ident()
    sca.ensemble_labels(
        blobs[0],
        SPEC,
        progress=lambda done, total: calls.append((done, total, threading.get_ident())),
        n_jobs=n_jobs,
    )
    total = sca.ensemble_spec.ensemble_size(SPEC)
    assert calls == [(done, total, caller) for done in range(1, total + 1)]


# joblib's loky executor, its chunks dropped while its manager thread hands the
# next one to a worker, may raise KeyError in that thread (a race inside loky,
# seen on a loaded machine); the ensemble has stopped all the same.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_raising_progress_stops_the_ensemble(blobs):
    def stop(done, total):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sca.ensemble_labels(blobs[0], SPEC, progress=stop, n_jobs=2)


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_every_run_on_threads_uses_one_blas_and_one_openmp_thread(blobs, monkeypatch, n_jobs):
    import sklearn.cluster
    from sklearn.utils._openmp_helpers import _openmp_effective_n_threads

    seen = []

    class Recording(sklearn.cluster.KMeans):
        def fit(self, X, y=None, sample_weight=None):
            seen.append((_threads("blas"), _openmp_effective_n_threads()))
            return super().fit(X, y, sample_weight)

    monkeypatch.setattr(sklearn.cluster, "KMeans", Recording)
    monkeypatch.setattr(sca.pool, "processes_allowed", lambda: False)  # as in a daemonic process
    before = _threads("blas")
    sca.ensemble_labels(blobs[0], SPEC, n_jobs=n_jobs)
    assert len(seen) == 9 and all(blas == {1} and omp == 1 for blas, omp in seen)
    assert _threads("blas") == before  # put back once the ensemble is done


def _limits(_):
    """What a task finds before setting any limit of its own."""
    import os

    import sklearn  # noqa: F401 - its OpenMP runtime loaded, so the controller sees it
    from sklearn.utils._openmp_helpers import _openmp_effective_n_threads

    return os.getpid(), _threads("blas"), _openmp_effective_n_threads()


def test_worker_processes_have_one_blas_and_one_openmp_thread():
    seen = sca.pool.spread(_limits, [(j,) for j in range(8)], n_jobs=2)
    assert {pid for pid, _, _ in seen} - {os.getpid()}  # other processes ran them
    assert all(blas == {1} and omp == 1 for _, blas, omp in seen)


def test_threads_give_the_labels_of_processes(blobs, monkeypatch):
    X, _ = blobs
    monkeypatch.setattr(sca.pool, "PROCESS_MIN_WORK", 0)
    on_processes = sca.ensemble_fit(X, SPEC, seed=5, n_jobs=2)
    monkeypatch.setattr(sca.pool, "processes_allowed", lambda: False)
    on_threads = sca.ensemble_fit(X, SPEC, seed=5, n_jobs=2)
    for key in ("labels", "models", "groups"):
        assert np.array_equal(on_threads[key], on_processes[key])


def _where(_):
    return os.getpid(), threading.get_ident()


def test_little_work_runs_on_this_thread_until_processes_have_started(monkeypatch):
    monkeypatch.setattr(sca.pool, "_started", set())
    here = (os.getpid(), threading.get_ident())
    items = [(j,) for j in range(6)]
    assert set(sca.pool.spread(_where, items, n_jobs=2, work=1.0)) == {here}
    assert here not in sca.pool.spread(_where, items, n_jobs=2)  # much work: processes
    # started: now little work goes to them too
    assert here not in sca.pool.spread(_where, items, n_jobs=2, work=1.0)


def _slow(j):
    time.sleep(0.02)
    return j


def test_calls_of_different_sizes_from_two_threads_share_the_pool():
    """loky resizes its reused pool only once no call uses it: two calls of
    different sizes at once (two jobs in the embedded default) must not wait on
    each other."""
    items = [(j,) for j in range(40)]
    found: dict = {}

    def call(n_jobs: int) -> None:
        found[n_jobs] = sca.pool.spread(_slow, items, n_jobs=n_jobs)

    threads = [threading.Thread(target=call, args=(n,), daemon=True) for n in (2, 3)]
    for thread in threads:
        thread.start()
        time.sleep(0.1)  # the first under way when the second starts
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads), "a call hung"
    assert found == {2: list(range(40)), 3: list(range(40))}


class _Enough(Exception):
    pass


def _stop_after_one(done: int, total: int) -> None:
    raise _Enough


def _fails(j):
    if j == 0:
        raise ValueError("task 0")
    return _slow(j)


def test_a_call_that_stops_or_fails_leaves_the_pool_to_the_others():
    """A cancelled job (its progress raises) or a failed run drops the chunks of its
    own call not yet begun, and no task of a call beside it on the shared pool."""
    items = [(j,) for j in range(60)]
    found: dict = {}

    def steady() -> None:
        found["steady"] = sca.pool.spread(_slow, items, n_jobs=2)

    thread = threading.Thread(target=steady, daemon=True)
    thread.start()
    time.sleep(0.1)
    with pytest.raises(_Enough):
        sca.pool.spread(_slow, items, n_jobs=2, progress=_stop_after_one)
    with pytest.raises(ValueError, match="task 0"):
        sca.pool.spread(_fails, items, n_jobs=2)
    thread.join(timeout=60)
    assert found.get("steady") == list(range(60))
    assert sca.pool.spread(_slow, items[:8], n_jobs=2) == list(range(8))


def _in_a_daemon(X, out):
    out.put(sca.ensemble_labels(X, SPEC, seed=5, n_jobs=2))


def test_a_daemonic_process_runs_the_ensemble_on_threads(blobs, monkeypatch):
    """A Celery prefork child is daemonic: it may start no process of its own."""
    context = multiprocessing.get_context("fork")
    out = context.Queue()
    child = context.Process(target=_in_a_daemon, args=(blobs[0], out), daemon=True)
    monkeypatch.setattr(sca.pool, "PROCESS_MIN_WORK", 0)
    child.start()
    labels = out.get(timeout=120)
    child.join(10)
    assert child.exitcode == 0
    assert np.array_equal(labels, sca.ensemble_labels(blobs[0], SPEC, seed=5, n_jobs=1))


def test_single_threaded_restores_blas_only_when_the_last_block_leaves():
    import sklearn  # noqa: F401 - its OpenMP runtime loaded, so the controller sees it

    before_blas, before_omp = _threads("blas"), _threads("openmp")
    entered, release = threading.Event(), threading.Event()

    def other():
        with single_threaded():
            entered.set()
            release.wait(10)

    thread = threading.Thread(target=other)
    with single_threaded():
        assert _threads("blas") == {1} and _threads("openmp") == {1}
        thread.start()
        entered.wait(10)
    # this block has left, the other thread's has not: BLAS stays at one thread
    assert _threads("blas") == {1} and _threads("openmp") == before_omp
    release.set()
    thread.join()
    assert _threads("blas") == before_blas


def test_a_stage_on_one_blas_thread_leaving_never_frees_blas_under_another_block(monkeypatch):
    """A stage held to one BLAS thread on another thread (a job of the
    service's) that leaves while this block runs does not hand BLAS its
    threads back under it, in either order of entry."""
    monkeypatch.setattr(sca.operators.threads, "THREADS", 2)
    before = _threads("blas")
    for stage_first in (True, False):
        entered, release = threading.Event(), threading.Event()

        @one_blas_thread
        def stage(P):
            entered.set()
            release.wait(10)

        thread = threading.Thread(target=stage, args=(SimpleNamespace(threaded_kernels=True),))
        if stage_first:
            thread.start()
            entered.wait(10)
        with single_threaded():
            if not stage_first:
                thread.start()
                entered.wait(10)
            release.set()
            thread.join()
            assert _threads("blas") == {1}
        assert _threads("blas") == before


def test_a_thread_that_once_limited_blas_does_not_keep_the_others_from_it(monkeypatch):
    """threadpoolctl lets only the thread that first set OpenBLAS's limit set it
    while that thread lives, unless the limit is a ``with`` block: a kernel pool
    thread that once fitted a k-means kept that control, and every block on
    another thread then left BLAS on its threads.  The blocks take control for
    their sets."""
    original = _threads("blas")
    if max(original) < 2:  # an earlier test of this process left BLAS on one thread
        _set_blas(2)
    before = _threads("blas")
    if max(before) < 2:
        pytest.skip("BLAS runs one thread here: nothing to hold back")
    holding, done = threading.Event(), threading.Event()

    def pool_thread():
        OpenBLASController.clear_controlling_thread(force=True)
        threadpools().select(user_api="blas").limit(limits=max(before))  # kept: never restored
        holding.set()
        done.wait(10)

    thread = threading.Thread(target=pool_thread)
    thread.start()
    holding.wait(10)
    try:
        with single_threaded():
            assert _threads("blas") == {1}
        assert _threads("blas") == {max(before)}
        monkeypatch.setattr(sca.operators.threads, "THREADS", 2)
        stage = one_blas_thread(lambda P: _threads("blas"))
        assert stage(SimpleNamespace(threaded_kernels=True)) == {1}
    finally:
        done.set()
        thread.join()
        _set_blas(max(original))


def _set_blas(count: int) -> None:
    """BLAS's threads set from this thread, the control taken and given up as the
    package's own blocks do."""
    with sca.operators.threads._blas_control():
        threadpools().select(user_api="blas").limit(limits=count)


def test_large_data_fits_kmeans_centres_on_a_sample(monkeypatch):
    X, truth = make_blobs(n_samples=3000, n_features=4, centers=5, cluster_std=0.4, random_state=1)
    run = {"algorithm": "kmeans", "k": 5, "seed": 11}
    full, full_centres = sca.ensemble_model(X, run)
    monkeypatch.setattr(sca.ensemble, "KMEANS_SUBSAMPLE", 300)
    labels, centres = sca.ensemble_model(X, run)
    assert centres.shape == (5, 4)
    assert adjusted_rand_score(full, labels) == 1.0
    assert adjusted_rand_score(truth, labels) == 1.0
    # the sample's centres label every row, as they label new rows later
    predicted = sca.ensemble_predict(centres, np.array([0, 5]), ["kmeans"], X)
    assert np.array_equal(predicted[:, 0], labels)
    # the sample is drawn from the run's seed: the same run gives the same labels
    assert np.array_equal(sca.ensemble_model(X, run)[0], labels)
    other = sca.ensemble_model(X, {**run, "seed": 12})[1]
    assert not np.allclose(np.sort(other, axis=0), np.sort(centres, axis=0), rtol=0, atol=1e-12)


def test_n_jobs_must_be_a_positive_integer(blobs):
    for bad in (0, -1, 1.5, True):
        with pytest.raises(sca.SCAError):
            sca.ensemble_labels(blobs[0], SPEC, n_jobs=bad)
