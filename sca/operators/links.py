"""The cluster graph of label runs read run by run (Meyer & Wessell, Sec. 2.4).

S = H H^T is disconnected exactly when its clusters' graph is: clusters a and
b joined when an element lies in both.  Joining each element's run-0 label to
its label in every other run gives a graph with the same components
(:meth:`sca.operators.factored.FactorOperator._pattern`).  Run by run, the
pairs of labels that occur are marked in a table of ``s_0 x s_j`` cells (the
two runs' numbers of labels), which stays small beside the n elements where a
hash of the n pairs (``np.unique``) is what costs.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

#: A run's table of label pairs is marked in place of ``np.unique`` of its n pairs
#: while it has at most this many cells per element ...
TABLE_CELLS_PER_ELEMENT = 8
#: ... or at most this many cells.
TABLE_MIN_CELLS = 1 << 20


def run_pairs(first: np.ndarray, labels: np.ndarray, span: int, first_span: int) -> np.ndarray:
    """The distinct pairs ``first[i] * span + labels[i]`` over the elements, ascending."""
    pair = first * span + labels.astype(np.int64, copy=False)
    cells = first_span * span
    if cells > max(TABLE_MIN_CELLS, TABLE_CELLS_PER_ELEMENT * first.size):
        return np.unique(pair)
    seen = np.zeros(cells, dtype=bool)
    seen[pair] = True
    return np.flatnonzero(seen)


def run0_components(codes, spans: np.ndarray) -> np.ndarray:
    """The component of the clusters' graph that each run-0 label lies in.

    Parameters
    ----------
    codes : array_like of shape (n, r)
        Each element's label in each run (``0 .. spans[j] - 1``).
    spans : ndarray of shape (r,)
        Each run's number of labels.

    Returns
    -------
    ndarray of shape (spans[0],)
        A component label per run-0 label.
    """
    spans = np.asarray(spans, dtype=np.int64)
    first = np.asarray(codes[:, 0], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(spans)[:-1]])
    K = int(spans.sum())
    heads, tails = [np.arange(spans[0])], [np.arange(spans[0])]
    for j in range(1, spans.size):
        pairs = run_pairs(first, np.asarray(codes[:, j]), int(spans[j]), int(spans[0]))
        a, b = np.divmod(pairs, spans[j])
        heads.append(a)
        tails.append(b + offsets[j])
    rows, cols = np.concatenate(heads), np.concatenate(tails)
    graph = sp.csr_array((np.ones(rows.size, dtype=bool), (rows, cols)), shape=(K, K))
    return csgraph.connected_components(graph, directed=False)[1][: spans[0]]
