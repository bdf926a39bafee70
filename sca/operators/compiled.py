"""The compiled loops of :mod:`sca.operators.kernels` (numba): imported on first
use, so that small inputs, and ``import sca``, never pay numba's start-up.

Each loop works on a range of rows (or a share of the pairs of groups) and
releases the GIL; :mod:`sca.operators.kernels` runs the ranges on the machine's cores.
Compiled code is cached on disk (``cache=True``) once per machine.

The inner loops index slices from zero (``codes[lo:hi]``, then ``range(hi -
lo)``), never an array by ``range(lo, hi)``: numba cannot prove such an index
non-negative and wraps it around at every access, which makes the pair counts
markedly slower.
"""

from __future__ import annotations

import numba
import numpy as np

#: Rows per inner block: a block's weights and outputs stay in the core's cache.
CHUNK = 4096
#: Rows per inner block of the block products: their entries (a few columns each)
#: stay in the core's cache while every run's codes are read.
BLOCK_ROWS = 2048
#: Rows per block of the pair counts, whose tables are larger.
JOINT_CHUNK = 1 << 16

_jit = numba.njit(nogil=True, cache=True, boundscheck=False)


@_jit
def rvec_rows(packed, binoff, x, lo, hi, out):
    """Weighted counts of each group's combined codes (``(groups, m)`` codes), four
    groups a pass over the block of rows: each weight read once for four updates,
    and four tables' updates independent of one another (each table's own
    updates in the order of the rows, as one group a pass makes them)."""
    g = packed.shape[0]
    for start in range(lo, hi, CHUNK):
        stop = min(start + CHUNK, hi)
        xs = x[start:stop]
        a = 0
        while a + 4 <= g:
            o0, o1 = out[binoff[a] : binoff[a + 1]], out[binoff[a + 1] : binoff[a + 2]]
            o2, o3 = out[binoff[a + 2] : binoff[a + 3]], out[binoff[a + 3] : binoff[a + 4]]
            c0, c1 = packed[a, start:stop], packed[a + 1, start:stop]
            c2, c3 = packed[a + 2, start:stop], packed[a + 3, start:stop]
            for i in range(stop - start):
                xi = xs[i]
                o0[c0[i]] += xi
                o1[c1[i]] += xi
                o2[c2[i]] += xi
                o3[c3[i]] += xi
            a += 4
        while a < g:
            base, codes = binoff[a], packed[a, start:stop]
            for i in range(stop - start):
                out[base + codes[i]] += xs[i]
            a += 1


@_jit
def vec_rows(packed, binoff, table, lo, hi, out):
    """Gathers of each element's entries of ``table``, summed over the groups, four
    groups a pass over the block of rows (one load and store of each element's
    sum for four gathers)."""
    g = packed.shape[0]
    for start in range(lo, hi, CHUNK):
        stop = min(start + CHUNK, hi)
        ys = out[start:stop]
        ys[:] = 0.0
        a = 0
        while a + 4 <= g:
            t0, t1 = table[binoff[a] : binoff[a + 1]], table[binoff[a + 1] : binoff[a + 2]]
            t2, t3 = table[binoff[a + 2] : binoff[a + 3]], table[binoff[a + 3] : binoff[a + 4]]
            c0, c1 = packed[a, start:stop], packed[a + 1, start:stop]
            c2, c3 = packed[a + 2, start:stop], packed[a + 3, start:stop]
            for i in range(stop - start):
                ys[i] += (t0[c0[i]] + t1[c1[i]]) + (t2[c2[i]] + t3[c3[i]])
            a += 4
        while a < g:
            base, codes = binoff[a], packed[a, start:stop]
            for i in range(stop - start):
                ys[i] += table[base + codes[i]]
            a += 1


@_jit
def joint_pairs(packed, w, pa, pb, width, mine, out):
    # Each pair's table (width^2 floats) stays in the core's cache while a
    # long block of rows streams past it.
    m = packed.shape[1]
    for start in range(0, m, JOINT_CHUNK):
        stop = min(start + JOINT_CHUNK, m)
        ws = w[start:stop]
        for p in mine:
            codes_a, codes_b, counts = packed[pa[p], start:stop], packed[pb[p], start:stop], out[p]
            for i in range(stop - start):
                counts[codes_a[i] * width + codes_b[i]] += ws[i]


@_jit
def _pack_block(block, runs, runptr, radix, acc, out):
    """Combined codes of a block of runs by elements ``block[run, i]`` into ``out[a, i]``:
    whole rows at a time, which the compiler vectorises."""
    size = block.shape[1]
    for a in range(runptr.size - 1):
        acc[:size] = 0
        for t in range(runptr[a], runptr[a + 1]):
            row, weight = block[runs[t]], radix[t]
            for i in range(size):
                acc[i] += row[i] * weight
        dest = out[a]
        for i in range(size):
            dest[i] = acc[i]


@_jit
def pack_rows(codes, runs, runptr, radix, lo, hi, out):
    # Each block of rows is first transposed, in tiles of 64 rows, so that the
    # packing reads whole runs, contiguous, instead of striding across rows.
    r = codes.shape[1]
    acc = np.empty(CHUNK, dtype=np.int64)
    runs_by_element = np.empty((r, CHUNK), dtype=codes.dtype)
    for start in range(lo, hi, CHUNK):
        stop = min(start + CHUNK, hi)
        rows, size = codes[start:stop], stop - start
        for i0 in range(0, size, 64):
            tile, dest = rows[i0 : i0 + 64], runs_by_element[:, i0 : i0 + 64]
            for j in range(r):
                for i in range(tile.shape[0]):
                    dest[j, i] = tile[i, j]
        _pack_block(runs_by_element[:, :size], runs, runptr, radix, acc, out[:, start:stop])


@_jit
def gather_columns(codes, perm, lo, hi, out):
    r = codes.shape[1]
    for start in range(lo, hi, 64):
        stop = min(start + 64, hi)
        source, columns = perm[start:stop], out[:, start:stop]
        for i in range(source.size):
            row = codes[source[i]]
            for j in range(r):
                columns[j, i] = row[j]


@_jit
def pack_runs(columns, runs, runptr, radix, lo, hi, out):
    acc = np.empty(CHUNK, dtype=np.int64)
    for start in range(lo, hi, CHUNK):
        stop = min(start + CHUNK, hi)
        _pack_block(columns[:, start:stop], runs, runptr, radix, acc, out[:, start:stop])


@_jit
def rvec_wide(rows, binoff, x, lo, hi, out):
    """Weighted counts from row-major codes ``(m, g)``, four groups an iteration."""
    g = rows.shape[1]
    block, xs = rows[lo:hi], x[lo:hi]
    for i in range(hi - lo):
        xi, a, row = xs[i], 0, block[i]
        while a + 4 <= g:
            out[binoff[a] + row[a]] += xi
            out[binoff[a + 1] + row[a + 1]] += xi
            out[binoff[a + 2] + row[a + 2]] += xi
            out[binoff[a + 3] + row[a + 3]] += xi
            a += 4
        while a < g:
            out[binoff[a] + row[a]] += xi
            a += 1


@_jit
def vec_wide(rows, binoff, table, lo, hi, out):
    """Gathers from row-major codes ``(m, g)``, four independent sums."""
    g = rows.shape[1]
    block, ys = rows[lo:hi], out[lo:hi]
    for i in range(hi - lo):
        a, s0, s1, s2, s3, row = 0, 0.0, 0.0, 0.0, 0.0, block[i]
        while a + 4 <= g:
            s0 += table[binoff[a] + row[a]]
            s1 += table[binoff[a + 1] + row[a + 1]]
            s2 += table[binoff[a + 2] + row[a + 2]]
            s3 += table[binoff[a + 3] + row[a + 3]]
            a += 4
        while a < g:
            s0 += table[binoff[a] + row[a]]
            a += 1
        ys[i] = (s0 + s1) + (s2 + s3)


@_jit
def mat_wide4(rows, binoff, table, c, lo, hi, out):
    """Gathers into columns ``c, c+1, ...`` of ``out`` (up to four) from row-major
    codes ``(m, g)``: ``table`` is ``(bins, 4)``, so each code's four entries
    share one cache line."""
    g = rows.shape[1]
    width = min(4, out.shape[1] - c)
    block, ys = rows[lo:hi], out[lo:hi]
    for i in range(hi - lo):
        s0, s1, s2, s3, row = 0.0, 0.0, 0.0, 0.0, block[i]
        for a in range(g):
            base = binoff[a] + row[a]
            s0 += table[base, 0]
            s1 += table[base, 1]
            s2 += table[base, 2]
            s3 += table[base, 3]
        ys[i, c] = s0
        if width > 1:
            ys[i, c + 1] = s1
        if width > 2:
            ys[i, c + 2] = s2
        if width > 3:
            ys[i, c + 3] = s3


@_jit
def scatter_block(rows, binoff, X, c0, w, lo, hi, out):
    """Weighted counts of ``b`` columns at once from row-major codes ``(m, g)``:
    ``out[binoff[a] + rows[i, a]] += w[i] X[i, c0:c0 + b]`` (rows of ``b``
    floats), one pass over the codes for the whole block, read in place from
    the columns of a wider X.  :data:`BLOCK_ROWS` rows at a time, run by run:
    the rows' weighted entries stay in the core's cache, as does each run's
    part of ``out``, where row by row every code's row is a miss.  In ``out``'s
    precision (single or double)."""
    g, b = rows.shape[1], out.shape[1]
    buffer = np.empty((BLOCK_ROWS, b), out.dtype)
    for start in range(lo, hi, BLOCK_ROWS):
        stop = min(start + BLOCK_ROWS, hi)
        block, xs, ws = rows[start:stop], X[start:stop], w[start:stop]
        for i in range(stop - start):
            source, wi, xi = xs[i], ws[i], buffer[i]
            for c in range(b):
                xi[c] = wi * source[c0 + c]
        for a in range(g):
            part = out[binoff[a] : binoff[a + 1]]
            for i in range(stop - start):
                dest, xi = part[block[i, a]], buffer[i]
                for c in range(b):
                    dest[c] += xi[c]


@_jit
def gather_block(rows, binoff, table, c0, w, lo, hi, out):
    """Gathers of ``b`` columns at once from row-major codes ``(m, g)``:
    ``out[i, c0:c0 + b] = w[i] sum_a table[binoff[a] + rows[i, a]]`` (rows of
    ``b`` floats), written in place into the columns of a wider out;
    :data:`BLOCK_ROWS` rows at a time, run by run, as :func:`scatter_block`, in
    ``table``'s precision."""
    g, b = rows.shape[1], table.shape[1]
    buffer = np.empty((BLOCK_ROWS, b), table.dtype)
    for start in range(lo, hi, BLOCK_ROWS):
        stop = min(start + BLOCK_ROWS, hi)
        block, ws = rows[start:stop], w[start:stop]
        buffer[: stop - start] = 0.0
        for a in range(g):
            part = table[binoff[a] : binoff[a + 1]]
            for i in range(stop - start):
                source, yi = part[block[i, a]], buffer[i]
                for c in range(b):
                    yi[c] += source[c]
        for i in range(stop - start):
            y, yi, wi = out[start + i, c0 : c0 + b], buffer[i], ws[i]
            for c in range(b):
                y[c] = wi * yi[c]


@_jit
def put_blocks(G, blocks, rows, cols, mine):
    """``G[rows[p, i], cols[p, j]] = blocks[p, i, j]`` and its mirror image
    ``G[cols[p, j], rows[p, i]]``, for the blocks ``p`` in ``mine``."""
    for p in mine:
        r, c, block = rows[p], cols[p], blocks[p]
        for i in range(block.shape[0]):
            ri = r[i]
            for j in range(block.shape[1]):
                G[ri, c[j]] = block[i, j]
                G[c[j], ri] = block[i, j]


@_jit
def _root(parent, x):
    """The root of ``x`` in the forest ``parent``, halving the path on the way."""
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


@_jit
def join_strong_pairs(h_indptr, h_indices, t_indptr, t_indices, lo, hi, least, parent):
    """Join in the forest ``parent`` each element ``i`` of ``lo:hi`` with every
    ``j > i`` that shares at least ``least`` of its clusters (H by rows:
    ``h_*``, by columns: ``t_*``), counting the pairs of each row in a table
    of n entries and clearing only those it touched."""
    n = parent.size
    counts = np.zeros(n, np.int32)
    touched = np.empty(n, np.int64)
    for i in range(lo, hi):
        m = 0
        for p in range(h_indptr[i], h_indptr[i + 1]):
            a = h_indices[p]
            for q in range(t_indptr[a], t_indptr[a + 1]):
                j = t_indices[q]
                if j > i:
                    if counts[j] == 0:
                        touched[m] = j
                        m += 1
                    counts[j] += 1
        for s in range(m):
            j = touched[s]
            if counts[j] >= least:
                ri, rj = _root(parent, i), _root(parent, j)
                if ri != rj:
                    parent[max(ri, rj)] = min(ri, rj)
            counts[j] = 0


@_jit
def merge_forests(parent, other):
    """Join in ``parent`` every element with its root in the forest ``other``."""
    for x in range(other.size):
        ri, rj = _root(parent, x), _root(parent, _root(other, x))
        if ri != rj:
            parent[max(ri, rj)] = min(ri, rj)


@_jit
def roots(parent):
    """Each element's root in the forest ``parent``."""
    out = np.empty(parent.size, np.int64)
    for x in range(parent.size):
        out[x] = _root(parent, x)
    return out
