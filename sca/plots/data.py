"""What the plots show, computed with numpy only (no matplotlib here).

Every function works through the :class:`~sca.operators.ConsensusOperator`
interface (``block_sums``, ``entries``, ``matmat``), so a plot of a million-element job costs
a few products with S, never an ``n x n`` array:

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

from ..iteration import random_start
from ..operators import ConsensusOperator

#: Largest side of the consensus image (cells, not pixels).
MAX_CELLS = 300
#: Pairs in the histogram; above this the pairs are a uniform sample.
MAX_PAIRS = 200_000


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
        members = order[bounds[c] : bounds[c + 1]]
        take = min(members.size, max(1, int(round(limit * members.size / n))))
        picked.append(members[np.linspace(0, members.size - 1, take).round().astype(int)])
    return np.concatenate(picked)


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
    sums = S.block_sums(bins)
    return {
        "image": sums / np.outer(counts, counts),
        "edges": edges,
        "order": order,
        "bounds": bounds,
    }


def consensus_values(S: ConsensusOperator, max_pairs: int = MAX_PAIRS, seed: int = 0):
    """Off-diagonal consensus values ``s_ij, i < j``.

    Returns ``(values, total_pairs, sampled)``: every pair when there are at
    most ``max_pairs``, else ``max_pairs`` pairs drawn uniformly (seeded).
    """
    n = S.n
    total = n * (n - 1) // 2
    if total <= max_pairs:
        rows, cols = np.triu_indices(n, k=1)
        return S.entries(rows, cols), total, False
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, n, size=2 * max_pairs)
    cols = rng.integers(0, n, size=2 * max_pairs)
    keep = rows != cols
    rows, cols = rows[keep][:max_pairs], cols[keep][:max_pairs]
    return S.entries(np.minimum(rows, cols), np.maximum(rows, cols)), total, True


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
