"""What the plots show, computed with numpy only (no matplotlib here).

Every function works through the :class:`~sca.operators.ConsensusOperator`
interface, so a plot of a million-element job costs a few products with S,
never an ``n x n`` array:

* :func:`aggregate` -- S reordered by cluster and averaged over at most
  ``max_cells x max_cells`` blocks of consecutive elements;
* :func:`consensus_values` -- the off-diagonal values ``s_ij, i < j`` (all of
  them for small n, a seeded uniform sample otherwise);
* :func:`trajectory` -- x_t of the paper's evolution ``x_t^T = x_{t-1}^T P``
  for a few elements;
* :func:`sample_elements` -- a bounded, cluster-stratified choice of elements.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..iteration import random_start
from ..operators import ConsensusOperator

#: Largest side of the consensus image (cells, not pixels).
MAX_CELLS = 300
#: Pairs in the histogram; above this the pairs are a uniform sample.
MAX_PAIRS = 200_000
#: Entries of a dense product ``S B`` formed at once by the generic aggregation.
_CHUNK_ENTRIES = 8_000_000


def cluster_order(labels) -> tuple[np.ndarray, np.ndarray]:
    """Elements sorted by cluster (stable) and the cluster boundaries.

    Returns ``(order, bounds)`` with ``bounds[c]:bounds[c+1]`` the positions
    of cluster ``c`` in ``order``.
    """
    labels = np.asarray(labels, dtype=np.int64)
    order = np.argsort(labels, kind="stable")
    sizes = np.bincount(labels, minlength=int(labels.max()) + 1 if labels.size else 0)
    return order, np.concatenate([[0], np.cumsum(sizes)])


def sample_elements(labels, limit: int) -> np.ndarray:
    """At most ``limit`` element indices, each cluster represented in proportion
    (at least one each), evenly spaced within the cluster; sorted by cluster."""
    labels = np.asarray(labels, dtype=np.int64)
    n = labels.size
    order, bounds = cluster_order(labels)
    if n <= limit:
        return order
    picked = []
    for c in range(bounds.size - 1):
        members = order[bounds[c]:bounds[c + 1]]
        take = min(members.size, max(1, int(round(limit * members.size / n))))
        picked.append(members[np.linspace(0, members.size - 1, take).round().astype(int)])
    return np.concatenate(picked)


def _indicator(bins: np.ndarray, g: int) -> sp.csr_array:
    n = bins.size
    return sp.csr_array((np.ones(n), (np.arange(n), bins)), shape=(n, g))


def _block_sums(S: ConsensusOperator, B: sp.csr_array) -> np.ndarray:
    """``B^T S B`` (with S's scaling) without forming S."""
    kind = getattr(S, "kind", "")
    scale = S.scale
    if kind == "factored":
        H = S.H if scale is None else sp.diags_array(scale) @ S.H
        A = B.T @ H
        return np.asarray((A @ A.T).toarray())
    if kind == "sparse":
        M = S.S if scale is None else sp.diags_array(scale) @ S.S @ sp.diags_array(scale)
        return np.asarray((B.T @ M @ B).toarray())
    g = B.shape[1]
    step = max(1, _CHUNK_ENTRIES // max(1, S.n))
    out = np.empty((g, g))
    for start in range(0, g, step):
        block = B[:, start:start + step].toarray()
        out[:, start:start + step] = B.T @ S.matmat(block)
    return out


def aggregate(S: ConsensusOperator, labels, max_cells: int = MAX_CELLS) -> dict:
    """S reordered by cluster, as block means over at most ``max_cells`` bins a side.

    Returns a dict with ``image`` (``g x g`` means), ``edges`` (``g + 1``
    bin edges in element positions), ``order`` (elements by cluster) and
    ``bounds`` (cluster boundaries in positions).  For ``n <= max_cells``
    every bin is one element, so ``image`` is S itself, reordered.
    """
    labels = np.asarray(labels, dtype=np.int64)
    n = labels.size
    order, bounds = cluster_order(labels)
    g = min(n, int(max_cells))
    edges = np.round(np.linspace(0, n, g + 1)).astype(np.int64)
    position = np.empty(n, dtype=np.int64)
    position[order] = np.arange(n)
    bins = np.searchsorted(edges, position, side="right") - 1
    counts = np.diff(edges).astype(float)
    sums = _block_sums(S, _indicator(bins, g))
    return {"image": sums / np.outer(counts, counts), "edges": edges, "order": order,
            "bounds": bounds}


def entries(S: ConsensusOperator, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """The entries ``s_ij`` for index arrays ``rows`` and ``cols`` (with S's scaling)."""
    rows, cols = np.asarray(rows), np.asarray(cols)
    kind = getattr(S, "kind", "")
    if kind == "dense":
        values = S.S[rows, cols]
    elif kind == "sparse":
        values = np.asarray(S.S.tocsr()[rows, cols]).ravel()
    elif kind == "factored":
        values = np.asarray(S.H[rows].multiply(S.H[cols]).sum(axis=1)).ravel()
    else:
        raise TypeError(f"no entry access for operator kind {kind!r}")
    if S.scale is not None:
        values = values * S.scale[rows] * S.scale[cols]
    return np.asarray(values, dtype=float)


def consensus_values(S: ConsensusOperator, max_pairs: int = MAX_PAIRS, seed: int = 0):
    """Off-diagonal consensus values ``s_ij, i < j``.

    Returns ``(values, total_pairs, sampled)``: every pair when there are at
    most ``max_pairs``, else ``max_pairs`` pairs drawn uniformly (seeded).
    """
    n = S.n
    total = n * (n - 1) // 2
    if total <= max_pairs:
        rows, cols = np.triu_indices(n, k=1)
        return entries(S, rows, cols), total, False
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, n, size=2 * max_pairs)
    cols = rng.integers(0, n, size=2 * max_pairs)
    keep = rows != cols
    rows, cols = rows[keep][:max_pairs], cols[keep][:max_pairs]
    return entries(S, np.minimum(rows, cols), np.maximum(rows, cols)), total, True


def standardise(x: np.ndarray) -> np.ndarray:
    """``(x - mean) / sd``: the shape of x_t, whatever its distance from uniform.

    P is doubly stochastic, so ``x_t = 1/n + c_t y_t`` with ``y_t`` the
    deflated iterate; an increasing affine map, which keeps every order and
    every gap split (Sec. 3), while x_t itself flattens toward uniform.
    """
    y = np.asarray(x, dtype=float) - np.mean(x)
    sd = np.std(y)
    return y / sd if sd > 0 else y


def trajectory(P: ConsensusOperator, steps: int, elements, seed: int = 0) -> np.ndarray:
    """Standardised ``x_t`` for ``t = 0..steps`` at ``elements`` (``steps+1 x m``).

    ``x_0`` is a seeded random probability vector (Sec. 4.1) and
    ``x_t^T = x_{t-1}^T P`` (Sec. 2.1, Eq. (2)); P is symmetric, so this is
    ``P x_{t-1}``.  The deflated iterate is renormalised every step (as in
    :func:`sca.iteration.evolve`), so late steps do not drown in rounding.
    """
    rng = np.random.default_rng(seed)
    y = random_start(P.n, rng, 1e-3 / np.sqrt(P.n))
    elements = np.asarray(elements)
    out = np.empty((steps + 1, elements.size))
    for t in range(steps + 1):
        if t:
            y = P.matmat(y)
        y = standardise(y)
        out[t] = y[elements]
    return out
