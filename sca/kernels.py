"""Row-block kernels of the label-matrix operator (:mod:`sca.labels`).

The runs of a label matrix are packed in groups whose combined codes fit a
byte (three runs of five labels: 125 codes), held as ``packed`` of shape
``(groups, n)``.  Every product with ``H`` then reads one byte per group and
element instead of one index and one float per run and element:

* ``H^T X``: per group, weighted counts of the combined codes (``bincount``),
  afterwards summed onto each run's labels;
* ``H Y``: per group, a table of the runs' entries of Y summed for each
  combined code, gathered per element;
* the Gram matrix ``H^T W H``: per pair of groups, weighted counts of the
  pairs of combined codes.

Each kernel takes a block of columns of ``packed`` (a block of rows of the
label matrix), so the same code serves an in-memory array and the chunks of
a Dask array.  (Where memory allows, the in-memory products use the sparse
one-hot matrix of the packed codes instead, which scipy multiplies faster.)
"""

from __future__ import annotations

import numpy as np

#: Rows per block in the numpy kernels (bounds their int temporaries).
BLOCK_ROWS = 1 << 18


def rmat(packed: np.ndarray, binoff: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Weighted counts of every group's combined codes: ``(bins, s)`` for X ``(m, s)``."""
    g, m = packed.shape
    out = np.zeros((int(binoff[-1]), X.shape[1]))
    for lo in range(0, m, BLOCK_ROWS):
        block, Xb = packed[:, lo : lo + BLOCK_ROWS], X[lo : lo + BLOCK_ROWS]
        for a in range(g):
            codes, size = block[a].astype(np.intp), int(binoff[a + 1] - binoff[a])
            for q in range(X.shape[1]):
                out[binoff[a] : binoff[a + 1], q] += np.bincount(codes, Xb[:, q], minlength=size)
    return out


def mat(packed: np.ndarray, binoff: np.ndarray, table: np.ndarray) -> np.ndarray:
    """``sum_a table[binoff[a] + packed[a, i]]`` for each element i: ``(m, s)``."""
    g, m = packed.shape
    columns = np.ascontiguousarray(table.T)
    out = np.zeros((table.shape[1], m))
    for q in range(table.shape[1]):
        for a in range(g):
            out[q] += columns[q, binoff[a] : binoff[a + 1]].take(packed[a])
    return out.T


def joint(packed: np.ndarray, binoff: np.ndarray, w: np.ndarray) -> np.ndarray:
    """For each pair ``a <= b`` of groups, the weighted counts of the pairs of
    combined codes (the Gram matrix's blocks before summing onto the runs):
    ``(g, g, B, B)`` with ``B`` the largest group's codes, upper triangle filled."""
    sizes = np.diff(binoff).astype(np.intp)
    g, m, B = packed.shape[0], packed.shape[1], int(sizes.max())
    out = np.zeros((g, g, B * B))
    for lo in range(0, m, BLOCK_ROWS):
        block, wb = packed[:, lo : lo + BLOCK_ROWS], w[lo : lo + BLOCK_ROWS]
        for a in range(g):
            base = block[a].astype(np.intp) * B
            for b in range(a, g):
                out[a, b] += np.bincount(base + block[b], wb, minlength=B * B)
    return out.reshape(g, g, B, B)


def joint0(packed: np.ndarray, binoff: np.ndarray, w: np.ndarray) -> np.ndarray:
    """:func:`joint` of the first group against every group: ``(g, B, B)``."""
    sizes = np.diff(binoff).astype(np.intp)
    g, m, B = packed.shape[0], packed.shape[1], int(sizes.max())
    out = np.zeros((g, B * B))
    for lo in range(0, m, BLOCK_ROWS):
        block, wb = packed[:, lo : lo + BLOCK_ROWS], w[lo : lo + BLOCK_ROWS]
        base = block[0].astype(np.intp) * B
        for b in range(g):
            out[b] += np.bincount(base + block[b], wb, minlength=B * B)
    return out.reshape(g, B, B)
