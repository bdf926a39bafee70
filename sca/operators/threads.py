"""The threads of the label kernels, and BLAS's and OpenMP's around them.

The kernels of :mod:`sca.operators.kernels` split their rows over the
machine's cores (:func:`spans`) and run the shares on a process-wide thread
pool (:func:`parallel`).  While they do, BLAS is held to one thread
(:func:`one_blas_thread`): its spinning threads would take the kernels' cores.
Work spread one task per core by its caller (the ensemble's runs) runs with
one BLAS and one OpenMP thread (:func:`single_threaded`).  Both go through one
cached ``threadpoolctl`` controller (:func:`threadpools`).  While BLAS is held
to one thread, a large dense product (the ``K x K`` Gram matrix's, in the
spectrum and the iteration) is itself cut over the cores (:func:`matmul`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from scipy.linalg.blas import dtrmm
from threadpoolctl import OpenBLASController, ThreadpoolController

#: Below this many rows per core a kernel runs on the calling thread alone.
MIN_ROWS_PER_THREAD = 1 << 15
#: Below this many multiply-adds per core a product runs on the calling thread alone.
MIN_MATMUL_WORK = 1 << 22
THREADS = max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)
_pool: tuple[int, ThreadPoolExecutor] | None = None


def _executor() -> ThreadPoolExecutor:
    """The kernels' thread pool, made anew in a forked child (a Celery worker
    process), where the parent's threads do not exist."""
    global _pool
    if _pool is None or _pool[0] != os.getpid():
        _pool = (os.getpid(), ThreadPoolExecutor(THREADS, thread_name_prefix="sca-kernel"))
    return _pool[1]


def parallel(tasks) -> None:
    """Run the zero-argument ``tasks``, the first on this thread, the rest on the pool."""
    futures = [_executor().submit(task) for task in tasks[1:]]
    tasks[0]()
    for future in futures:
        future.result()


_controllers: dict = {}


def threadpools():
    """The process's thread pools (BLAS, OpenMP) under a cached ``threadpoolctl``
    controller: a new one reads every loaded library's state, which costs far
    more than a limit set through this one.  A controller sees only the
    libraries loaded when it was made, so another is made once scikit-learn
    (and its OpenMP runtime) is loaded."""
    key = "sklearn" in sys.modules
    if key not in _controllers:
        import scipy.linalg  # noqa: F401 - scipy's BLAS loaded, so the controller sees it

        _controllers[key] = ThreadpoolController()
    return _controllers[key]


def one_blas_thread(stage):
    """Decorate a stage ``stage(P, ...)``: while P's products run the compiled
    kernels on every core, BLAS runs on one thread (its work here is on small
    ``K x K`` matrices).  OpenBLAS's threads otherwise keep spinning for a
    while after each call, on the cores the kernels need, and slow the
    iteration several times over."""

    @functools.wraps(stage)
    def limited(P, *args, **kwargs):
        global _held
        if THREADS == 1 or not getattr(P, "threaded_kernels", False):
            return stage(P, *args, **kwargs)
        with _blas_on_one_thread():
            with _held_lock:
                _held += 1
            try:
                return stage(P, *args, **kwargs)
            finally:
                with _held_lock:
                    _held -= 1

    return limited


_held_lock = threading.Lock()
#: Stages running under :func:`one_blas_thread` (BLAS on one thread meanwhile).
_held = 0
_ALIGN = 64


def _cut(size: int) -> list[int]:
    """Edges of one share per core of ``size`` rows or columns, at multiples of
    BLAS's register blocks."""
    edges = [min(size, -(-size * t // THREADS) // _ALIGN * _ALIGN) for t in range(THREADS)]
    return edges + [size]


def _split(work: int) -> bool:
    """Whether a product of ``work`` multiply-adds is cut over the cores."""
    return _held > 0 and THREADS > 1 and work >= THREADS * MIN_MATMUL_WORK


def matmul(A: np.ndarray, B: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``A @ B``, cut over the cores while :func:`one_blas_thread` holds BLAS to
    one thread: A's rows, or B's columns where those are more, one share per
    core, each a one-thread BLAS product of its own (BLAS's own threads are
    the ones held back).  The shares are cut at multiples of BLAS's register
    blocks, so that where BLAS sums each entry the same way for any number of
    rows (OpenBLAS's Haswell kernels do) the result is the whole product's
    bit for bit; elsewhere (OpenBLAS's small-matrix kernels for AVX-512, and
    float32 products) a share may round otherwise in the last bits.  Where
    BLAS is not held, or for a small product, ``A @ B`` as it stands.  Written
    into ``out`` (of the product's shape, not overlapping A or B) when given."""
    m, n = A.shape[0], B.shape[1] if B.ndim == 2 else 1
    if B.ndim != 2 or not _split(m * n * A.shape[1]):
        return A @ B if out is None else np.matmul(A, B, out=out)
    out = np.empty((m, n), dtype=np.result_type(A, B)) if out is None else out
    by_rows = m >= n
    edges = _cut(m if by_rows else n)

    def share(lo: int, hi: int) -> None:
        if by_rows:
            np.matmul(A[lo:hi], B, out=out[lo:hi])
        else:
            np.matmul(A, B[:, lo:hi], out=out[:, lo:hi])

    parallel([functools.partial(share, lo, hi) for lo, hi in zip(edges[:-1], edges[1:])])
    return out


def gram(A: np.ndarray) -> np.ndarray:
    """``A^T A`` for a tall A, its rows cut over the cores as :func:`matmul` cuts
    them (each share's ``A_i^T A_i`` a one-thread BLAS product, then summed);
    elsewhere, or for a small A, ``A.T @ A`` as it stands."""
    m, n = A.shape
    if not _split(m * n * n // 2):
        return A.T @ A
    edges = _cut(m)
    parts: list = [None] * THREADS

    def share(t: int) -> None:
        part = A[edges[t] : edges[t + 1]]
        parts[t] = part.T @ part

    parallel([functools.partial(share, t) for t in range(THREADS)])
    return sum(parts[1:], parts[0])


def times_triangular(Y: np.ndarray, M: np.ndarray) -> None:
    """``Y <- Y M`` in place for an upper triangular M (BLAS's ``trmm``: half the
    multiply-adds of a full product, and no second array), Y's rows cut over
    the cores as :func:`matmul` cuts them."""
    m, b = Y.shape
    edges = _cut(m) if _split(m * b * b // 2) else [0, m]

    def share(lo: int, hi: int) -> None:
        part = Y[lo:hi].T  # (Y_i M)^T = M^T Y_i^T: Fortran's view of C-ordered rows
        done = dtrmm(1.0, M, part, side=0, lower=0, trans_a=1, overwrite_b=1)
        if not np.shares_memory(done, part):  # columns of a wider Y: copied by f2py
            part[...] = done

    parallel([functools.partial(share, lo, hi) for lo, hi in zip(edges[:-1], edges[1:])])


_blas_lock = threading.Lock()
_blas_holders = 0
_blas_limit = None


@contextlib.contextmanager
def _blas_control():
    """This thread's limits on a process-wide BLAS pool take effect in the block.

    threadpoolctl (3.6 on) lets only one thread, the first to set a limit on
    OpenBLAS's pthreads pool, set it while that thread lives, and a limit set
    outside its ``with`` blocks never hands that control back: a pool thread
    (the kernels', or a job's) that once fitted a k-means kept it, and every
    other thread's limit was then silently ignored (BLAS's threads spinning
    beside the kernels).  So control is taken for the set and given up after.
    """
    clear = getattr(OpenBLASController, "clear_controlling_thread", None)
    if clear is not None:
        clear(force=True)
    try:
        yield
    finally:
        if clear is not None:
            clear(force=True)


@contextlib.contextmanager
def _blas_on_one_thread():
    """Hold BLAS to one thread for the block.

    BLAS's limit is the process's, not the thread's, and blocks of
    :func:`one_blas_thread` and :func:`single_threaded` run at the same time
    on several threads (the service's jobs, pool threads): a block restoring
    what it found on entry would hand BLAS its threads back while another
    block still runs, or leave it on one thread for good.  So the last block
    to leave restores what the first found.  Every block sets the limit on
    entry, not only the first: a limit set and restored meanwhile outside
    these blocks (``threadpoolctl.threadpool_limits`` around a call, which
    puts back what it found) must not leave a block running with BLAS's
    threads.
    """
    global _blas_holders, _blas_limit
    with _blas_lock, _blas_control():
        limit = threadpools().select(user_api="blas").limit(limits=1)
        if _blas_holders == 0:
            _blas_limit = limit
        _blas_holders += 1
    try:
        yield
    finally:
        with _blas_lock:
            _blas_holders -= 1
            if _blas_holders == 0:
                with _blas_control():
                    _blas_limit.restore_original_limits()
                _blas_limit = None


@contextlib.contextmanager
def single_threaded():
    """Run the block with one BLAS thread and one OpenMP thread.

    For work that is itself spread over the cores one task per core (the
    ensemble's runs, the worker's per-run tasks), where BLAS's and OpenMP's own
    threads would only contend with the other tasks for the same cores.
    OpenMP's limit belongs to the calling thread, so each block sets its own;
    BLAS's is held as :func:`_blas_on_one_thread` holds it.
    """
    with _blas_on_one_thread(), threadpools().select(user_api="openmp").limit(limits=1):
        yield


def spans(m: int) -> list[tuple[int, int]]:
    """``m`` rows cut into one span per thread, each of at least
    :data:`MIN_ROWS_PER_THREAD` rows (one span below that)."""
    parts = max(1, min(THREADS, m // MIN_ROWS_PER_THREAD))
    edges = np.linspace(0, m, parts + 1).astype(np.int64)
    return list(zip(edges[:-1].tolist(), edges[1:].tolist()))
