"""Row-block kernels of the label-matrix operator (:mod:`sca.operators.labels`).

The runs of a label matrix are packed in groups whose combined codes fit a
byte (three runs of five labels: 125 codes), held as ``packed`` of shape
``(groups, n)``.  Every product with ``H`` then reads one byte per group and
element instead of one index and one float per run and element:

* ``H^T X``: per group, weighted counts of the combined codes, afterwards
  summed onto each run's labels (:func:`rmat`);
* ``H Y``: per group, a table of the runs' entries of Y summed for each
  combined code, gathered per element (:func:`mat`);
* the Gram matrix ``H^T W H``: per pair of groups, weighted counts of the
  pairs of combined codes (:func:`joint`), put onto the runs' labels
  (:func:`block_gram`; the components' graph likewise, :func:`block_links`).

Each kernel takes a block of columns of ``packed`` (a block of rows of the
label matrix), so the same code serves an in-memory array and the chunks of
a Dask array.  From :data:`COMPILED_MIN_ROWS` rows on, a kernel runs the
compiled loops of :mod:`sca.operators.compiled` (numba), its rows (or, for the pair
counts, its pairs) split over the machine's cores: the loops release the
GIL, so plain threads run them in parallel, and concurrent callers (the
service's request threads) need no lock.  Below that, numpy's ``bincount``
and ``take`` do the same work without numba's start-up cost.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from . import threads

# The threads' controls, imported from here before they had their own module.
from .threads import one_blas_thread, single_threaded, threadpools  # noqa: F401

#: Below this many rows the kernels are plain numpy (bincount, take): numba's
#: import and first call in a fresh process would cost more.
COMPILED_MIN_ROWS = 1 << 12


def _float2d(X) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(X, dtype=np.float64).reshape(X.shape[0], -1))


def _loops():
    """The compiled loops (:mod:`sca.operators.compiled`)."""
    # Imported on first use, not with the package: numba's import and the loops'
    # compilation cost more than a small input's whole work (COMPILED_MIN_ROWS).
    from . import compiled

    return compiled


def _compiled(m: int):
    """The compiled loops for ``m`` rows, or None where numpy is cheaper."""
    return None if m < COMPILED_MIN_ROWS else _loops()


def _counts(loop, codes, binoff, x, m: int) -> np.ndarray:
    """One column of weighted counts by a compiled scatter ``loop`` over ``m`` rows,
    each core counting its rows into its own vector, then summed."""
    x = np.ascontiguousarray(x, dtype=np.float64).ravel()
    spans = threads.spans(m)
    outs = [np.zeros(int(binoff[-1])) for _ in spans]
    threads.parallel(
        [partial(loop, codes, binoff, x, lo, hi, out) for (lo, hi), out in zip(spans, outs)]
    )
    return sum(outs[1:], outs[0])


def _gathers(loop, codes, binoff, table, m: int, out=None) -> np.ndarray:
    """One column of gathers by a compiled ``loop`` over ``m`` rows, split over the cores."""
    table = np.ascontiguousarray(table, dtype=np.float64).ravel()
    out = np.empty(m) if out is None else out
    threads.parallel(
        [partial(loop, codes, binoff, table, lo, hi, out) for lo, hi in threads.spans(m)]
    )
    return out


def rmat(packed: np.ndarray, binoff: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Weighted counts of every group's combined codes: ``(bins, s)`` for X ``(m, s)``,
    a column at a time (one column's counts stay in the core's cache)."""
    c, m = _compiled(packed.shape[1]), packed.shape[1]
    sizes = np.diff(binoff)
    return np.column_stack(
        [
            np.concatenate(
                [np.bincount(codes, x, minlength=sizes[a]) for a, codes in enumerate(packed)]
            )
            if c is None
            else _counts(c.rvec_rows, packed, binoff, x, m)
            for x in _float2d(X).T
        ]
    )


def mat(packed: np.ndarray, binoff: np.ndarray, table: np.ndarray) -> np.ndarray:
    """``sum_a table[binoff[a] + packed[a, i]]`` for each element i: ``(m, s)``,
    a column of ``table`` at a time."""
    c, m = _compiled(packed.shape[1]), packed.shape[1]
    table = _float2d(table)
    out = np.empty((table.shape[1], m))
    for column, y in zip(table.T, out):
        if c is None:
            y[:] = sum(column[binoff[a] + codes.astype(np.intp)] for a, codes in enumerate(packed))
        else:
            _gathers(c.vec_rows, packed, binoff, column, m, out=y)
    return out.T


def joint(packed: np.ndarray, binoff: np.ndarray, w: np.ndarray, pairs, dtype=np.float64):
    """For each pair ``(a, b)`` of groups in ``pairs``, the weighted counts of
    the pairs of combined codes: ``(len(pairs), B, B)`` with ``B`` the largest
    group's codes.  The pairs are split over the cores; float32 counts (a
    rough spectrum) are cheaper than float64."""
    B = int(np.diff(binoff).max())
    pa, pb = (
        np.ascontiguousarray(np.asarray(pairs, dtype=np.int64).reshape(-1, 2)[:, c]) for c in (0, 1)
    )
    w = np.ascontiguousarray(w, dtype=dtype)
    c = _compiled(packed.shape[1])
    if c is None:
        return (
            np.stack(
                [
                    np.bincount(packed[a].astype(np.intp) * B + packed[b], w, minlength=B * B)
                    for a, b in zip(pa, pb)
                ]
            )
            .astype(dtype, copy=False)
            .reshape(pa.size, B, B)
        )
    out = np.zeros((pa.size, B * B), dtype=dtype)
    # the pairs are shared out, not the rows: worth a thread from one core's share of rows
    parts = (
        1
        if packed.shape[1] * pa.size < threads.MIN_ROWS_PER_THREAD
        else min(threads.THREADS, pa.size)
    )
    shares = [np.arange(t, pa.size, parts) for t in range(parts)]
    threads.parallel([partial(c.joint_pairs, packed, w, pa, pb, B, mine, out) for mine in shares])
    return out.reshape(pa.size, B, B)


def block_gram(
    packed, binoff, w, pairs, marginal, index, K: int, dtype, single: bool = False
) -> np.ndarray:
    """``(DH)^T (DH)`` over the rows of ``packed`` (weights ``w = d^2``), one row
    and column more for the marginals' padding: the
    weighted counts of each group's codes and of each pair of groups' pairs of
    codes, put onto the runs' labels.  Linear in the rows, so a chunked
    operator sums the blocks' (K-sized) results.  ``single``: every group is one
    run (runs of many labels), so its codes are its run's labels and the counts
    of a pair of groups are G's block as they stand (the marginals are identities)."""
    g = marginal.shape[0]
    B = int(np.diff(binoff).max())
    # A group with itself: each element's code paired with itself, so its
    # block of counts is diagonal, the weighted counts of the group's codes.
    own = rmat(packed, binoff, w[:, None]).ravel()
    width = index.shape[1]
    G = np.zeros((K + 1, K + 1))
    if single:
        for a in range(g):
            size = binoff[a + 1] - binoff[a]
            G[index[a, :size], index[a, :size]] = own[binoff[a] : binoff[a + 1]]
        if len(pairs):
            counts = joint(packed, binoff, w, pairs, dtype)
            _put_blocks(G, counts[:, :width, :width], index[pairs[:, 0]], index[pairs[:, 1]])
        return G
    # Onto the runs' labels: block (a, b) of G is marginal_a^T counts_ab marginal_b,
    # one product per group on each side (marginals zero-padded to one shape).
    for a in range(g):  # G's diagonal blocks, their upper triangle mirrored
        block = marginal[a, : binoff[a + 1] - binoff[a]]
        upper = np.triu(block.T @ (own[binoff[a] : binoff[a + 1], None] * block))
        G[np.ix_(index[a], index[a])] = upper + np.triu(upper, 1).T
    if len(pairs):
        counts = joint(packed, binoff, w, pairs, dtype)
        pa, pb = pairs.T
        right = np.empty((len(pairs), B, width), dtype=dtype)
        for b in range(g):  # counts_ab marginal_b: one product per b
            at = np.flatnonzero(pb == b)
            right[at] = (counts[at].reshape(-1, B) @ marginal[b]).reshape(at.size, B, width)
        blocks = np.empty((len(pairs), width, width))
        for a in range(g):  # marginal_a^T (...): one product per a
            at = np.flatnonzero(pa == a)
            stacked = right[at].transpose(1, 0, 2).reshape(B, -1)
            blocks[at] = (marginal[a].T @ stacked).reshape(width, at.size, width).transpose(1, 0, 2)
        _put_blocks(G, blocks, index[pa], index[pb])
    return G


def _put_blocks(G, blocks, rows, cols) -> None:
    """Blocks ``p`` of G at ``rows[p] x cols[p]`` and their mirror images (disjoint
    cells but for the marginals' padding, where every block holds zeros), the
    blocks shared out over the cores."""
    c = _compiled(blocks.shape[0] * blocks.shape[1] * blocks.shape[2])
    rows, cols = np.ascontiguousarray(rows), np.ascontiguousarray(cols)
    if c is None:
        G[rows[:, :, None], cols[:, None, :]] = blocks
        G[cols[:, :, None], rows[:, None, :]] = blocks.transpose(0, 2, 1)
        return
    blocks = np.ascontiguousarray(blocks)
    parts = max(1, min(threads.THREADS, blocks.size // threads.MIN_ROWS_PER_THREAD))
    threads.parallel(
        [
            partial(c.put_blocks, G, blocks, rows, cols, np.arange(t, len(blocks), parts))
            for t in range(parts)
        ]
    )


def block_links(packed, binoff, w, pairs, first, marginal, index, K: int) -> np.ndarray:
    """For each run-0 label, the elements among the rows of ``packed`` that join
    it to each cluster (``first``: a group-0 code's run-0 label), ``K + 1``
    columns (the last the marginals' padding); nonzero where the cluster graph
    has an edge.  A chunked operator sums the blocks' results."""
    counts = joint(packed, binoff, w, pairs)
    links = np.zeros((first.shape[1], K + 1))
    for b in range(len(pairs)):
        size = binoff[b + 1] - binoff[b]
        seen = counts[b, : binoff[1], :size] > 0
        links[:, index[b]] += first.T @ seen @ marginal[b, :size]
    return links


def _layout(groups, radix):
    runs = np.concatenate([np.asarray(g, dtype=np.int64) for g in groups])
    runptr = np.concatenate([[0], np.cumsum([len(g) for g in groups])]).astype(np.int64)
    return runs, runptr, np.asarray(radix, dtype=np.int64)[runs]


def pack(codes: np.ndarray, groups, radix, dtype, rowmajor: bool = False) -> np.ndarray:
    """Combined codes of a block of rows of the label matrix: group a's code is
    ``sum_j codes[:, j] * radix[j]`` over its runs j; ``(g, rows)``, or
    ``(rows, g)`` when ``rowmajor``."""
    return _pack(np.ascontiguousarray(codes), groups, radix, dtype, rowmajor, by_run=False)


def pack_columns(columns: np.ndarray, groups, radix, dtype, rowmajor: bool = False):
    """:func:`pack` of the label matrix held by runs, ``columns`` of shape ``(r, n)``."""
    return _pack(columns, groups, radix, dtype, rowmajor, by_run=True)


def _pack(codes, groups, radix, dtype, rowmajor: bool, by_run: bool):
    dtype, m = np.dtype(dtype), codes.shape[1] if by_run else codes.shape[0]
    runs, runptr, weights = _layout(groups, radix)
    out = np.empty((m, len(groups)) if rowmajor else (len(groups), m), dtype=dtype)
    view = out.T if rowmajor else out  # the kernels write (g, m)
    c = _compiled(m)
    if c is None:
        for a in range(len(groups)):
            acc = np.zeros(m, dtype=dtype)
            for t in range(runptr[a], runptr[a + 1]):
                column = codes[runs[t]] if by_run else codes[:, runs[t]]
                acc += column.astype(dtype) * dtype.type(weights[t])
            view[a] = acc
        return out
    kernel = c.pack_runs if by_run else c.pack_rows
    threads.parallel(
        [partial(kernel, codes, runs, runptr, weights, lo, hi, view) for lo, hi in threads.spans(m)]
    )
    return out


def rvec(rows: np.ndarray, binoff: np.ndarray, x: np.ndarray) -> np.ndarray:
    """:func:`rmat` of one column from row-major codes ``(m, g)`` (compiled only:
    the wide codes are used from :data:`COMPILED_MIN_ROWS` rows on)."""
    return _counts(_loops().rvec_wide, rows, binoff, x, rows.shape[0])


def vec(rows: np.ndarray, binoff: np.ndarray, table: np.ndarray) -> np.ndarray:
    """:func:`mat` of one column from row-major codes ``(m, g)`` (compiled only)."""
    return _gathers(_loops().vec_wide, rows, binoff, table, rows.shape[0])


def mat_wide(rows: np.ndarray, binoff: np.ndarray, table: np.ndarray) -> np.ndarray:
    """:func:`mat` from row-major codes ``(m, g)``: ``(m, s)`` for ``table`` of shape
    ``(bins, s)``, four columns a pass (a gather reads one cache line for all
    four, where one column at a time reads one for each); a last one or two
    columns go one at a time (compiled only)."""
    loops = _loops()
    table = _float2d(table)
    m, s = rows.shape[0], table.shape[1]
    out = np.empty((m, s))
    for c in range(0, s, 4):
        if s - c < 3:  # the last one or two columns
            for j in range(c, s):
                out[:, j] = vec(rows, binoff, table[:, j])
            continue
        four = np.zeros((table.shape[0], 4))
        four[:, : s - c] = table[:, c : c + 4]
        threads.parallel(
            [
                partial(loops.mat_wide4, rows, binoff, four, c, lo, hi, out)
                for lo, hi in threads.spans(m)
            ]
        )
    return out


def _weights(weights, m: int) -> np.ndarray:
    """Each of the m rows' weight as the compiled loops read it (ones for None)."""
    return np.ones(m) if weights is None else np.ascontiguousarray(weights, dtype=np.float64)


def _even_width(s: int, width: int) -> int:
    """Columns a pass for ``s`` columns in as few passes of at most ``width`` as
    will do, each as wide as the others (no last pass of a few columns, which
    costs a read of every code for little)."""
    passes = -(-s // max(width, 1))
    return max(1, -(-s // max(passes, 1)))


def scatter_wide(
    rows: np.ndarray, binoff: np.ndarray, X: np.ndarray, width: int, weights=None, dtype=np.float64
) -> np.ndarray:
    """:func:`rmat` of a block ``X`` ``(m, s)``, each row times its weight (none if
    None), from row-major codes ``(m, g)``: one pass over the codes for each
    ``width`` columns, read from X in place (a wider pass's tables, K rows of
    its columns, outgrow the cache), each core counting its rows into its own
    ``(bins, width)`` table, then summed; the tables and the result in ``dtype``
    (single precision halves the memory a pass moves; compiled only)."""
    X = _float2d(X)
    m, s = X.shape
    w, spans, bins = _weights(weights, m), threads.spans(m), int(binoff[-1])
    out = np.empty((bins, s), dtype)
    loop = _loops().scatter_block
    width = _even_width(s, width)
    for c in range(0, s, width):
        tables = [np.zeros((bins, min(width, s - c)), dtype) for _ in spans]
        threads.parallel(
            [
                partial(loop, rows, binoff, X, c, w, lo, hi, table)
                for (lo, hi), table in zip(spans, tables)
            ]
        )
        out[:, c : c + width] = sum(tables[1:], tables[0])
    return out


def gather_wide(
    rows: np.ndarray, binoff: np.ndarray, table: np.ndarray, width: int, weights=None
) -> np.ndarray:
    """:func:`mat` of a block ``table`` ``(bins, s)`` from row-major codes ``(m, g)``,
    each row times its weight (none if None): one pass over the codes for each
    ``width`` columns, summed in the table's precision (single or double) and
    written in place into the ``(m, s)`` result, in double (compiled only)."""
    table = np.asarray(table)
    if table.dtype != np.float32:
        table = table.astype(np.float64, copy=False)
    table = table.reshape(table.shape[0], -1)
    m, s = rows.shape[0], table.shape[1]
    w, spans = _weights(weights, m), threads.spans(m)
    out = np.empty((m, s))
    loop = _loops().gather_block
    width = _even_width(s, width)
    for c in range(0, s, width):
        part = np.ascontiguousarray(table[:, c : c + width])
        threads.parallel([partial(loop, rows, binoff, part, c, w, lo, hi, out) for lo, hi in spans])
    return out


def permuted_columns(codes: np.ndarray, perm: np.ndarray) -> np.ndarray:
    """``codes[perm].T`` as a C-contiguous ``(r, n)`` array (one run per row)."""
    c = _compiled(perm.size)
    if c is None:
        return np.ascontiguousarray(np.asarray(codes)[perm].T)
    codes = np.ascontiguousarray(codes)
    perm = np.asarray(perm, dtype=np.int64)
    out = np.empty((codes.shape[1], perm.size), dtype=codes.dtype)
    threads.parallel(
        [partial(c.gather_columns, codes, perm, lo, hi, out) for lo, hi in threads.spans(perm.size)]
    )
    return out


def strong_pair_roots(H, least: int, by_cluster=None) -> np.ndarray:
    """Each element's component among the pairs that share at least ``least``
    of the clusters of the membership matrix H (``n x K``, sparse; ``by_cluster``
    ``H^T`` in CSR form, when the caller holds it): as the root of its tree, one
    forest a core over its rows, then merged.  The pairs are joined as they are counted
    rather than listed for scipy's ``connected_components``: blocks of s elements
    have about n s / 2 of them (10^7 edges at n = 10^5, s = 200)."""
    rows, cols = H.tocsr(), (H.T.tocsr() if by_cluster is None else by_cluster)
    loops, spans = _loops(), threads.spans(H.shape[0])
    pairs = (rows.indptr, rows.indices, cols.indptr, cols.indices)
    forests = [np.arange(H.shape[0], dtype=np.int64) for _ in spans]
    join = loops.join_strong_pairs
    threads.parallel(
        [partial(join, *pairs, lo, hi, least, f) for (lo, hi), f in zip(spans, forests)]
    )
    for other in forests[1:]:
        loops.merge_forests(forests[0], other)
    return loops.roots(forests[0])
