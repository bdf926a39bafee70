"""Diagnostics and evaluation (Meyer & Wessell, Definition 2.7 and Sec. 5).

The uncoupling measure of Definition 2.7 is defined for two blocks; for a
partition into k clusters it generalises directly to the share of the total
weight that lies outside the diagonal blocks,

    σ(S, partition) = 1 - Σ_c e_c^T S e_c / e^T S e.

For P doubly stochastic the denominator is n (Theorem 2.8).
"""

from __future__ import annotations

import numpy as np

from .errors import SCAError
from .operators import ConsensusOperator, is_dask


def uncoupling_measure(S: ConsensusOperator, labels) -> float:
    """The uncoupling measure σ of the partition ``labels`` for S (or P).

    σ is the off-block weight over the total weight,
    ``1 - Σ_c e_c^T S e_c / e^T S e``: Definition 2.7 generalised from two
    blocks to k clusters.

    Parameters
    ----------
    S : ConsensusOperator
        The consensus matrix, or P.
    labels : array_like of int, shape (n,)
        Each element's cluster, ``0 .. k - 1``.

    Returns
    -------
    float
        The measure σ, in [0, 1]; 0 when the total weight is zero.

    Raises
    ------
    SCAError
        With ``field="labels"`` when ``labels`` is not of length n.

    References
    ----------
    .. [1] C. D. Meyer and C. D. Wessell, Stochastic Data Clustering, Sec. 2.3,
       Definition 2.7 and Theorem 2.8.
    """
    labels = labels if is_dask(labels) else np.asarray(labels)  # Dask: stays on the cluster
    if labels.shape != (S.n,):
        raise SCAError(f"labels must have length n = {S.n}", "labels")
    # the diagonal blocks' weight element by element: no k x k matrix of block sums
    inside = float(np.sum(S.within_sums(labels.astype(np.int64))))
    total = float(np.sum(S.row_sums()))
    return float(1.0 - inside / total) if total > 0 else 0.0


def confidence(P: ConsensusOperator, labels) -> dict:
    """How firmly each element and each cluster hold together under the walk P.

    For a doubly stochastic P (Sec. 2.3) and a partition:

    * ``elements``: for each element i, ``sum_{j in c(i)} P_ij``, the
      probability that one step of the walk from i stays in its own cluster
      (the uncoupling of Definition 2.7 seen from one element: 1 minus it is
      the share of i's row outside its block);
    * ``clusters``: for each cluster c, the mean of its elements' figures,
      ``e_c^T P e_c / |c|``;
    * ``uncoupling``: for each cluster c, σ(P) of the two blocks {c, the
      rest}, ``2 (|c| - e_c^T P e_c) / n`` (Definition 2.7; the total weight of
      P is n, Theorem 2.8).

    For Dask ``labels`` (a chunked P, :mod:`sca.operators.chunked`)
    ``elements`` is a Dask array chunked like them, and the clusters'
    figures are reductions over its blocks.
    """
    if is_dask(labels):  # the elements' figures stay on the cluster; the sums come back
        import dask
        import dask.array as da

        labels = labels.astype(np.int64)
        within = da.clip(P.within_sums(labels), 0.0, 1.0)
        count = int(labels.max().compute()) + 1
        sizes, inside = dask.compute(
            da.bincount(labels, minlength=count), da.bincount(labels, within, minlength=count)
        )
        sizes = sizes.astype(float)
    else:
        labels = np.asarray(labels, dtype=np.int64)
        within = np.clip(P.within_sums(labels), 0.0, 1.0)
        sizes = np.bincount(labels).astype(float)
        inside = np.bincount(labels, weights=within)
    return {
        "elements": within,
        "clusters": inside / sizes,
        "uncoupling": 2.0 * (sizes - inside) / P.n,
    }


def matching(labels, reference) -> np.ndarray:
    """Best one-to-one matching of the clusters of ``labels`` to those of ``reference``.

    The matching maximises the total overlap
    (``scipy.optimize.linear_sum_assignment``).

    Parameters
    ----------
    labels : array_like of int, shape (n,)
        0-based integer labels.
    reference : array_like of int, shape (n,)
        0-based integer labels of the same elements.

    Returns
    -------
    ndarray of int
        The mapping: ``mapping[c]`` is the reference cluster matched to cluster ``c`` (or -1
        when ``labels`` has more clusters).
    """
    labels, reference = np.asarray(labels), np.asarray(reference)
    overlap = np.zeros((int(labels.max()) + 1, int(reference.max()) + 1))
    np.add.at(overlap, (labels, reference), 1)
    return overlap_matching(overlap)


def overlap_matching(overlap: np.ndarray) -> np.ndarray:
    """:func:`matching` from the table of overlaps (``overlap[c, d]``: the elements
    in cluster c of the labels and d of the reference)."""
    from scipy.optimize import linear_sum_assignment  # scipy.optimize is slow to import

    rows, cols = linear_sum_assignment(-np.asarray(overlap, dtype=float))
    mapping = np.full(overlap.shape[0], -1)
    mapping[rows] = cols
    return mapping


def clustering_errors(labels, truth) -> int:
    """Misclustered elements under the best one-to-one matching of clusters.

    Parameters
    ----------
    labels : array_like, shape (n,)
        A clustering (any labels).
    truth : array_like, shape (n,)
        The true classes of the same elements (any labels).

    Returns
    -------
    int
        The number of elements whose cluster is not matched to their class.

    Raises
    ------
    SCAError
        With ``field="truth"`` when ``labels`` and ``truth`` differ in length.

    See Also
    --------
    matching : The matching used.
    """
    labels, truth = np.asarray(labels), np.asarray(truth)
    if labels.shape != truth.shape:
        raise SCAError("labels and truth differ in length", "truth")
    a = np.unique(labels, return_inverse=True)[1].ravel()
    b = np.unique(truth, return_inverse=True)[1].ravel()
    return int(np.sum(matching(a, b)[a] != b))


def evaluate(labels, truth) -> dict:
    """Error count under the best matching and adjusted Rand index.

    Parameters
    ----------
    labels : array_like, shape (n,)
        A clustering (any labels).
    truth : array_like, shape (n,)
        The true classes of the same elements (any labels).

    Returns
    -------
    dict
        ``errors`` (int, :func:`clustering_errors`) and ``ari`` (float,
        scikit-learn's ``adjusted_rand_score``).

    Raises
    ------
    SCAError
        With ``field="truth"`` when ``labels`` and ``truth`` differ in length.
    """
    from sklearn.metrics import adjusted_rand_score

    return {
        "errors": clustering_errors(labels, truth),
        "ari": float(adjusted_rand_score(truth, labels)),
    }
