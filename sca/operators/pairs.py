"""Counts over pairs of label runs: the Gram matrix and the cluster graph.

For the label-matrix operator (:mod:`sca.operators.labels`, Meyer & Wessell,
Sec. 1 and 2.4):

* ``G = (DH)^T (DH)`` counts, weighted, each pair of labels that share an
  element: from the packed codes, a pair of groups of runs at a time
  (:func:`packed_gram`);
* S = H H^T is disconnected exactly when its clusters' graph is (clusters a
  and b joined when an element lies in both).  Joining each element's run-0
  label to its label in every other run gives a graph with the same
  components (:meth:`sca.operators.factored.FactorOperator._pattern`): read
  from the packed codes, group 0 against every group
  (:func:`packed_run0_components`), or, for runs of more labels than a packed
  group holds, run by run, the pairs of labels that occur marked in a table
  of ``s_0 x s_j`` cells (:func:`run0_components`), which stays small beside
  the n elements where a hash of the n pairs (``np.unique``) is what costs.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from . import kernels

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


def packed_gram(op, dtype) -> np.ndarray:
    """``(DH)^T (DH)`` of the label operator ``op`` from weighted counts of pairs of
    its combined codes."""
    limit = op._gram_limit
    packing = op._packed(limit)
    g = len(packing.groups)
    pairs = np.array([(a, b) for a in range(g) for b in range(a + 1, g)]).reshape(-1, 2)
    marginal, index = op.marginals(limit)
    G = op._map(
        kernels.block_gram,
        pairs,
        marginal.astype(dtype, copy=False),
        index,
        op.n_clusters,
        np.dtype(dtype),
        all(len(runs) == 1 for runs in packing.groups),
        by_row=(op._weights(),),
        limit=limit,
    )
    return np.array(G[:-1, :-1], dtype=dtype)


def packed_run0_components(op) -> tuple[np.ndarray, np.ndarray]:
    """The component of each run-0 label of the label operator ``op``, from the
    Gram matrix's packing, and whether some element has that label."""
    limit = op._gram_limit
    packing = op._packed(limit)
    binoff, g = packing.binoff, len(packing.groups)
    pairs = np.array([(0, b) for b in range(g)])  # group 0 against every group
    marginal, index = op.marginals(limit)
    first = marginal[0, : binoff[1], : op.spans[0]]  # combined code -> run-0 label
    K = op.n_clusters
    links = op._map(
        kernels.block_links,
        pairs,
        first,
        marginal,
        index,
        K,
        by_row=(op.ones(),),
        limit=limit,
    )
    # edges from run 0's labels only (the last column: the marginals' padding), listed
    # as such: a dense K x K graph would be read whole to find them
    rows, cols = np.nonzero(links[:, :K] > 0)
    graph = sp.csr_array((np.ones(rows.size, dtype=bool), (rows, cols)), shape=(K, K))
    _, labels = csgraph.connected_components(graph, directed=False)
    used = np.diag(links[:, : op.spans[0]]) > 0  # each run-0 label's own column
    return labels[: op.spans[0]], used
