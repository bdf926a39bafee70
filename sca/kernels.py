"""Row-block kernels of the label-matrix operator (:mod:`sca.labels`), compiled with numba.

The runs of a label matrix are packed in groups whose combined codes fit a
byte (three runs of five labels: 125 codes), held as ``packed`` of shape
``(groups, n)``.  Every product with ``H`` then reads one byte per group and
element instead of one index and one float per run and element:

* ``H^T X``: per group, weighted counts of the combined codes, afterwards
  summed onto each run's labels (:func:`rmat`);
* ``H Y``: per group, a table of the runs' entries of Y summed for each
  combined code, gathered per element (:func:`mat`);
* the Gram matrix ``H^T W H``: per pair of groups, weighted counts of the
  pairs of combined codes (:func:`joint`).

Each kernel takes a block of columns of ``packed`` (a block of rows of the
label matrix), so the same code serves an in-memory array and the chunks of
a Dask array.  In memory, a kernel's rows (or, for the pair counts, its
pairs) are split over the machine's cores: the compiled loops release the
GIL, so plain threads run them in parallel, and concurrent callers (the
service's request threads) need no lock.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import numba
import numpy as np

#: Rows per inner block: a block's weights and outputs stay in the core's cache.
CHUNK = 4096
#: Rows per block of the pair counts, whose tables are larger.
JOINT_CHUNK = 1 << 16
#: Below this many rows per core a kernel runs on the calling thread alone.
MIN_ROWS_PER_THREAD = 1 << 15
THREADS = max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)
_pool: tuple[int, ThreadPoolExecutor] | None = None

_jit = numba.njit(nogil=True, cache=True, boundscheck=False)


@_jit
def _rmat_rows(packed, binoff, X, lo, hi, out):
    g, s = packed.shape[0], X.shape[1]
    for start in range(lo, hi, CHUNK):
        stop = min(start + CHUNK, hi)
        for a in range(g):
            base, codes = binoff[a], packed[a]
            for i in range(start, stop):
                row = base + codes[i]
                for q in range(s):
                    out[row, q] += X[i, q]


@_jit
def _rvec_rows(packed, binoff, x, lo, hi, out):
    """:func:`_rmat_rows` for one column (the common case), without the inner loop."""
    for start in range(lo, hi, CHUNK):
        stop = min(start + CHUNK, hi)
        for a in range(packed.shape[0]):
            base, codes = binoff[a], packed[a]
            for i in range(start, stop):
                out[base + codes[i]] += x[i]


@_jit
def _mat_rows(packed, binoff, table, lo, hi, out):
    g, s = packed.shape[0], table.shape[1]
    for start in range(lo, hi, CHUNK):
        stop = min(start + CHUNK, hi)
        out[start:stop] = 0.0
        for a in range(g):
            base, codes = binoff[a], packed[a]
            for i in range(start, stop):
                row = base + codes[i]
                for q in range(s):
                    out[i, q] += table[row, q]


@_jit
def _vec_rows(packed, binoff, table, lo, hi, out):
    """:func:`_mat_rows` for one column."""
    for start in range(lo, hi, CHUNK):
        stop = min(start + CHUNK, hi)
        out[start:stop] = 0.0
        for a in range(packed.shape[0]):
            base, codes = binoff[a], packed[a]
            for i in range(start, stop):
                out[i] += table[base + codes[i]]


@_jit
def _joint_pairs(packed, w, pa, pb, width, mine, out):
    # Each pair's table (width^2 floats) stays in the core's cache while a
    # long block of rows streams past it.
    m = packed.shape[1]
    for start in range(0, m, JOINT_CHUNK):
        stop = min(start + JOINT_CHUNK, m)
        for p in mine:
            codes_a, codes_b, counts = packed[pa[p]], packed[pb[p]], out[p]
            for i in range(start, stop):
                counts[codes_a[i] * width + codes_b[i]] += w[i]


@_jit
def _pack_rows(codes, runs, runptr, radix, lo, hi, out):
    g = runptr.size - 1
    for start in range(lo, hi, 64):
        stop = min(start + 64, hi)
        for i in range(start, stop):
            for a in range(g):
                acc = 0
                for t in range(runptr[a], runptr[a + 1]):
                    acc += codes[i, runs[t]] * radix[t]
                out[a, i] = acc


@_jit
def _gather_columns(codes, perm, lo, hi, out):
    r = codes.shape[1]
    for start in range(lo, hi, 64):
        stop = min(start + 64, hi)
        for i in range(start, stop):
            src = perm[i]
            for j in range(r):
                out[j, i] = codes[src, j]


@_jit
def _pack_columns(columns, runs, runptr, radix, lo, hi, out):
    g = runptr.size - 1
    for start in range(lo, hi, 64):
        stop = min(start + 64, hi)
        for a in range(g):
            for i in range(start, stop):
                acc = 0
                for t in range(runptr[a], runptr[a + 1]):
                    acc += columns[runs[t], i] * radix[t]
                out[a, i] = acc


@_jit
def _rvec_wide(rows, binoff, x, lo, hi, out):
    """Weighted counts from row-major codes ``(m, g)``, four groups an iteration."""
    g = rows.shape[1]
    for i in range(lo, hi):
        xi, a = x[i], 0
        while a + 4 <= g:
            out[binoff[a] + rows[i, a]] += xi
            out[binoff[a + 1] + rows[i, a + 1]] += xi
            out[binoff[a + 2] + rows[i, a + 2]] += xi
            out[binoff[a + 3] + rows[i, a + 3]] += xi
            a += 4
        while a < g:
            out[binoff[a] + rows[i, a]] += xi
            a += 1


@_jit
def _vec_wide(rows, binoff, table, lo, hi, out):
    """Gathers from row-major codes ``(m, g)``, four independent sums."""
    g = rows.shape[1]
    for i in range(lo, hi):
        a, s0, s1, s2, s3 = 0, 0.0, 0.0, 0.0, 0.0
        while a + 4 <= g:
            s0 += table[binoff[a] + rows[i, a]]
            s1 += table[binoff[a + 1] + rows[i, a + 1]]
            s2 += table[binoff[a + 2] + rows[i, a + 2]]
            s3 += table[binoff[a + 3] + rows[i, a + 3]]
            a += 4
        while a < g:
            s0 += table[binoff[a] + rows[i, a]]
            a += 1
        out[i] = (s0 + s1) + (s2 + s3)


def _executor() -> ThreadPoolExecutor:
    """The kernels' thread pool, made anew in a forked child (a Celery worker
    process), where the parent's threads do not exist."""
    global _pool
    if _pool is None or _pool[0] != os.getpid():
        _pool = (os.getpid(), ThreadPoolExecutor(THREADS, thread_name_prefix="sca-kernel"))
    return _pool[1]


def _parallel(tasks) -> None:
    """Run the zero-argument ``tasks``, the first on this thread, the rest on the pool."""
    futures = [_executor().submit(task) for task in tasks[1:]]
    tasks[0]()
    for future in futures:
        future.result()


def _spans(m: int) -> list[tuple[int, int]]:
    parts = max(1, min(THREADS, m // MIN_ROWS_PER_THREAD))
    edges = np.linspace(0, m, parts + 1).astype(np.int64)
    return list(zip(edges[:-1].tolist(), edges[1:].tolist()))


def _float2d(X) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(X, dtype=np.float64).reshape(X.shape[0], -1))


def rmat(packed: np.ndarray, binoff: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Weighted counts of every group's combined codes: ``(bins, s)`` for X ``(m, s)``."""
    X = _float2d(X)
    kernel, X = (_rvec_rows, X.ravel()) if X.shape[1] == 1 else (_rmat_rows, X)
    spans = _spans(packed.shape[1])
    outs = [np.zeros((int(binoff[-1]),) + X.shape[1:]) for _ in spans]
    _parallel(
        [
            lambda lo=lo, hi=hi, out=out: kernel(packed, binoff, X, lo, hi, out)
            for (lo, hi), out in zip(spans, outs)
        ]
    )
    return sum(outs[1:], outs[0]).reshape(-1, 1 if X.ndim == 1 else X.shape[1])


def mat(packed: np.ndarray, binoff: np.ndarray, table: np.ndarray) -> np.ndarray:
    """``sum_a table[binoff[a] + packed[a, i]]`` for each element i: ``(m, s)``."""
    table = _float2d(table)
    s = table.shape[1]
    kernel, table = (_vec_rows, table.ravel()) if s == 1 else (_mat_rows, table)
    out = np.empty((packed.shape[1],) + table.shape[1:])
    _parallel(
        [
            lambda lo=lo, hi=hi: kernel(packed, binoff, table, lo, hi, out)
            for lo, hi in _spans(packed.shape[1])
        ]
    )
    return out.reshape(-1, s)


def joint(packed: np.ndarray, binoff: np.ndarray, w: np.ndarray, pairs, dtype=np.float64):
    """For each pair ``(a, b)`` of groups in ``pairs``, the weighted counts of
    the pairs of combined codes: ``(len(pairs), B, B)`` with ``B`` the largest
    group's codes.  The pairs are split over the cores; float32 counts (a
    rough spectrum) take a quarter less time than float64."""
    B = int(np.diff(binoff).max())
    pa, pb = (
        np.ascontiguousarray(np.asarray(pairs, dtype=np.int64).reshape(-1, 2)[:, c]) for c in (0, 1)
    )
    w = np.ascontiguousarray(w, dtype=dtype)
    out = np.zeros((pa.size, B * B), dtype=dtype)
    parts = 1 if packed.shape[1] < MIN_ROWS_PER_THREAD else min(THREADS, pa.size)
    shares = [np.arange(t, pa.size, parts) for t in range(parts)]
    _parallel([partial(_joint_pairs, packed, w, pa, pb, B, mine, out) for mine in shares])
    return out.reshape(pa.size, B, B)


def _layout(groups, radix):
    runs = np.concatenate([np.asarray(g, dtype=np.int64) for g in groups])
    runptr = np.concatenate([[0], np.cumsum([len(g) for g in groups])]).astype(np.int64)
    return runs, runptr, np.asarray(radix, dtype=np.int64)[runs]


def pack(codes: np.ndarray, groups, radix, dtype, rowmajor: bool = False) -> np.ndarray:
    """Combined codes of a block of rows of the label matrix: group a's code is
    ``sum_j codes[:, j] * radix[j]`` over its runs j; ``(g, rows)``, or
    ``(rows, g)`` when ``rowmajor``."""
    runs, runptr, weights = _layout(groups, radix)
    codes = np.ascontiguousarray(codes)
    out, view = _packed_out(len(groups), codes.shape[0], dtype, rowmajor)
    _parallel(
        [
            partial(_pack_rows, codes, runs, runptr, weights, lo, hi, view)
            for lo, hi in _spans(codes.shape[0])
        ]
    )
    return out


def pack_columns(columns: np.ndarray, groups, radix, dtype, rowmajor: bool = False):
    """:func:`pack` of the label matrix held by runs, ``columns`` of shape ``(r, n)``."""
    runs, runptr, weights = _layout(groups, radix)
    out, view = _packed_out(len(groups), columns.shape[1], dtype, rowmajor)
    _parallel(
        [
            partial(_pack_columns, columns, runs, runptr, weights, lo, hi, view)
            for lo, hi in _spans(columns.shape[1])
        ]
    )
    return out


def _packed_out(g: int, m: int, dtype, rowmajor: bool):
    """The packed array and the ``(g, m)`` view the kernels write through."""
    if rowmajor:
        out = np.empty((m, g), dtype=dtype)
        return out, out.T
    out = np.empty((g, m), dtype=dtype)
    return out, out


def rvec(rows: np.ndarray, binoff: np.ndarray, x: np.ndarray) -> np.ndarray:
    """:func:`rmat` of one column from row-major codes ``(m, g)``."""
    x = np.ascontiguousarray(x, dtype=np.float64).ravel()
    spans = _spans(rows.shape[0])
    outs = [np.zeros(int(binoff[-1])) for _ in spans]
    _parallel(
        [partial(_rvec_wide, rows, binoff, x, lo, hi, out) for (lo, hi), out in zip(spans, outs)]
    )
    return sum(outs[1:], outs[0])


def vec(rows: np.ndarray, binoff: np.ndarray, table: np.ndarray) -> np.ndarray:
    """:func:`mat` of one column from row-major codes ``(m, g)``."""
    table = np.ascontiguousarray(table, dtype=np.float64).ravel()
    out = np.empty(rows.shape[0])
    _parallel(
        [partial(_vec_wide, rows, binoff, table, lo, hi, out) for lo, hi in _spans(rows.shape[0])]
    )
    return out


def permuted_columns(codes: np.ndarray, perm: np.ndarray) -> np.ndarray:
    """``codes[perm].T`` as a C-contiguous ``(r, n)`` array (one run per row)."""
    codes = np.ascontiguousarray(codes)
    perm = np.asarray(perm, dtype=np.int64)
    out = np.empty((codes.shape[1], perm.size), dtype=codes.dtype)
    _parallel(
        [
            lambda lo=lo, hi=hi: _gather_columns(codes, perm, lo, hi, out)
            for lo, hi in _spans(perm.size)
        ]
    )
    return out
