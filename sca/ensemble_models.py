"""What an ensemble's runs learned, and new rows labelled by it (Meyer & Wessell, Sec. 1).

A run of :mod:`sca.ensemble` keeps its model (:func:`sca.ensemble.ensemble_model`:
k-means centres, NMF components or a single-linkage subsample);
:func:`stacked_models` stacks the runs' models into one array, and
:func:`ensemble_predict` labels new rows in each run as the run would have,
which gives their consensus rows against the ensemble's elements
(:mod:`sca.newrows`).
"""

from __future__ import annotations

import numpy as np

from .density import DENSITY_ALGORITHMS, density_predict


def stacked_models(models) -> tuple[np.ndarray, np.ndarray]:
    """The runs' models stacked, and ``groups``: run j owns rows ``groups[j]:groups[j+1]``."""
    models = list(models)
    return np.concatenate(models), np.concatenate([[0], np.cumsum([m.shape[0] for m in models])])


def ensemble_predict(models: np.ndarray, groups: np.ndarray, algorithms, X) -> np.ndarray:
    """Labels of new rows ``X`` in each run of an ensemble.

    A k-means run labels a row by its nearest centre, a single-linkage run by
    its nearest subsample point's cluster (:func:`sca.density.density_predict`);
    an NMF run solves for the row's coefficients with the components fixed and
    takes their argmax.  With
    the components fixed, NMF's objective ``||x - w H||`` is a nonnegative least
    squares problem in w, solved exactly (``scipy.optimize.nnls``): the point
    multiplicative updates (``non_negative_factorization(update_H=False)``)
    approach, in a fraction of their time.

    Parameters
    ----------
    models : ndarray of shape (K, m)
        The runs' models stacked (:func:`sca.ensemble.ensemble_model`).
    groups : ndarray of int, shape (r + 1,)
        Run j owns rows ``groups[j]:groups[j+1]`` of ``models``.
    algorithms : sequence of str
        ``algorithms[j]`` is run j's algorithm (one of :data:`sca.options.ALGORITHMS`).
    X : array_like of shape (q, m)
        The new rows.

    Returns
    -------
    ndarray of int32, shape (q, r)
        Each new row's label in each run.

    See Also
    --------
    ensemble_fit : Gives ``models``, ``groups`` and ``algorithms``.
    """
    from scipy.optimize import nnls
    from sklearn.metrics import pairwise_distances_argmin

    X = np.asarray(X, dtype=float)
    labels = np.empty((X.shape[0], len(algorithms)), dtype=np.int32)
    for j, algorithm in enumerate(algorithms):
        model = models[groups[j] : groups[j + 1]]
        if str(algorithm) == "kmeans":
            labels[:, j] = pairwise_distances_argmin(X, model)
        elif str(algorithm) in DENSITY_ALGORITHMS:
            labels[:, j] = density_predict(model, X)
        else:
            W = np.array([nnls(model.T, x)[0] for x in X]).reshape(X.shape[0], -1)
            labels[:, j] = np.argmax(W, axis=1)
    return labels
