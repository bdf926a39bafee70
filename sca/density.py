"""Ensemble members that follow chains of near neighbours, not centres.

A k-means run cuts space into convex cells, so no level of a k-means
ensemble holds two moons or two rings apart.  A ``"single"`` run is single
linkage (scikit-learn's ``AgglomerativeClustering(linkage="single")``) cut
at k clusters on a random subsample of the rows; every row then takes the
cluster of its nearest subsample point.  Single linkage joins points through
chains of near neighbours, so a group of any shape stays whole as long as a
gap parts it from the next; the subsample, drawn from the run's seed, makes
the runs differ as k-means' initialisations do (the ensemble of Sec. 1),
and bounds a run's cost.

A run's model is its subsample's points, cluster by cluster, each cluster
closed by a row of NaN: a new row takes the cluster of its nearest point
(:func:`density_predict`), as the run's own rows did, and the model stacks
with k-means centres (one row per point, the data's columns).
"""

from __future__ import annotations

import numpy as np

#: Ensemble algorithms of this module (their k is the number of clusters cut).
DENSITY_ALGORITHMS = ("single",)
#: Share of the rows in a run's subsample ...
SUBSAMPLE_SHARE = 0.5
#: ... within these bounds: single linkage's cost, and the model's rows, grow with
#: it (its square and itself).
SUBSAMPLE_BOUNDS = (50, 1000)


def subsample_size(n: int) -> int:
    """Rows in a single-linkage run's subsample of n rows (all of them when n is small).

    Examples
    --------
    >>> subsample_size(40), subsample_size(500), subsample_size(10**6)
    (40, 250, 1000)
    """
    low, high = SUBSAMPLE_BOUNDS
    return int(min(n, max(low, min(high, round(SUBSAMPLE_SHARE * n)))))


def density_model(X, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """One ``"single"`` run on X: its labels and its model.

    Parameters
    ----------
    X : ndarray of shape (n, m)
        The raw data, one row per element.
    k : int
        Clusters cut on the subsample (at most its size).
    seed : int
        Draws the subsample (:func:`subsample_size` rows, without replacement).

    Returns
    -------
    labels : ndarray of int32, shape (n,)
        Each row's cluster: its nearest subsample point's.
    model : ndarray of shape (s + clusters, m)
        The subsample's points, cluster by cluster, each cluster closed by a
        row of NaN (:func:`density_predict`).
    """
    from sklearn.cluster import AgglomerativeClustering

    X = np.asarray(X, dtype=float)
    n, m = X.shape
    rows = np.sort(np.random.default_rng(seed).choice(n, subsample_size(n), replace=False))
    points = X[rows]
    clusters = AgglomerativeClustering(n_clusters=min(k, rows.size), linkage="single")
    labels = clusters.fit_predict(points)
    blocks = []
    for c in range(int(labels.max()) + 1):
        blocks += [points[labels == c], np.full((1, m), np.nan)]
    model = np.concatenate(blocks)
    return density_predict(model, X), model


def density_predict(model: np.ndarray, X) -> np.ndarray:
    """Labels of rows ``X`` in a ``"single"`` run: the cluster of the nearest subsample point.

    Parameters
    ----------
    model : ndarray of shape (s + clusters, m)
        The run's model (:func:`density_model`): points cluster by cluster,
        each cluster closed by a row of NaN.
    X : array_like of shape (q, m)
        The rows.

    Returns
    -------
    ndarray of int32, shape (q,)
    """
    from sklearn.metrics import pairwise_distances_argmin

    closing = np.isnan(model[:, 0])
    cluster = np.cumsum(closing) - closing  # a point's cluster: the NaN rows before it
    points = ~closing
    nearest = pairwise_distances_argmin(np.asarray(X, dtype=float), model[points])
    return cluster[points][nearest].astype(np.int32)
