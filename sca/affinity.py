"""What the estimator's X is: its consensus operator, and new rows of raw data as consensus rows.

:class:`sca.StochasticClustering` takes X as one of :data:`AFFINITIES`: raw
data clustered by an ensemble (the consensus of Sec. 1) or by the
shared-nearest-neighbour measure (Meyer & Wessell, Sec. 4.4), label runs
(S = H H^T, never formed), or S itself.  :func:`affinity_operator` builds S
with :func:`sca.pipeline.build_operator` and keeps what placing new rows
needs of its making; :func:`affinity_rows` gives new rows of raw data their
consensus rows against the fitted elements and their self-similarities
(:mod:`sca.newrows`), which :func:`sca.placement.predict` places.
"""

from __future__ import annotations

import numpy as np

from .newrows import ensemble_rows, ensemble_state, neighbour_index, neighbour_rows
from .operators import ConsensusOperator
from .pipeline import RawData, build_operator

AFFINITIES = ("ensemble", "snn", "labels", "precomputed")
#: The affinities whose X is raw data: scaled by ``scale``, and placed by ``predict``.
RAW_DATA = ("ensemble", "snn")
#: Neighbours of the shared-nearest-neighbour measure by default (fewer when n is small).
DEFAULT_SNN_NEIGHBORS = 10


def affinity_operator(
    affinity: str, X, seed: int, ensemble=None, n_neighbors=None, metric="euclidean", scale=None
) -> tuple[ConsensusOperator, RawData | None, dict]:
    """The consensus operator of X, the raw data as the core saw it, and what new rows need.

    The ensemble keeps the runs' models (:func:`sca.ensemble.ensemble_fit`,
    the same plan and so the same S); the SNN keeps a neighbour index of the
    scaled data.

    Parameters
    ----------
    affinity : {"ensemble", "snn", "labels", "precomputed"}
        What X is (:class:`sca.StochasticClustering`'s ``affinity``).
    X : array_like or sparse matrix
        Raw data, label runs, or S.
    seed : int
        Seeds the ensemble.
    ensemble : list of dict, optional
        The ensemble spec (None: :func:`sca.ensemble_spec.default_ensemble`).
    n_neighbors : int, optional
        κ of the SNN (None: min(:data:`DEFAULT_SNN_NEIGHBORS`, n - 1)).
    metric : str, default "euclidean"
        The SNN's distance.
    scale : str, optional
        The ``scale`` option for raw data.

    Returns
    -------
    S : ConsensusOperator
        The consensus operator.
    raw : sca.pipeline.RawData or None
        The raw data as the core saw it (None unless X is raw data).
    placement : dict
        What :func:`affinity_rows` needs (empty unless X is raw data).
    """
    if affinity == "precomputed":
        return build_operator(consensus=X)[0], None, {}
    if affinity == "labels":
        return build_operator(labels=X)[0], None, {}
    if affinity == "snn":
        kappa = min(DEFAULT_SNN_NEIGHBORS, X.shape[0] - 1) if n_neighbors is None else n_neighbors
        S, raw = build_operator(data=X, snn={"kappa": kappa, "metric": metric}, scale=scale)
        return S, raw, {"neighbours": neighbour_index(raw.scaled, metric), "kappa": kappa}
    S, raw = build_operator(data=X, ensemble=ensemble, seed=seed, scale=scale)
    fitted = raw.fitted
    state = ensemble_state(
        fitted["labels"], fitted["models"], fitted["groups"], fitted["algorithms"]
    )
    return S, raw, state


def affinity_rows(affinity: str, state: dict, X) -> tuple[np.ndarray, np.ndarray]:
    """New rows of raw data as consensus rows against the fitted elements.

    Parameters
    ----------
    affinity : {"ensemble", "snn"}
        What the fitted X was.
    state : dict
        :func:`affinity_operator`'s ``placement``, with the balanced ``"P"``.
    X : ndarray of shape (q, m)
        The new rows, scaled as the fitted X was.

    Returns
    -------
    rows : ndarray of shape (n, q)
        Each new row's consensus row, one per column.
    selfs : ndarray of shape (q,)
        Their self-similarities.
    """
    P = state["P"]
    if affinity == "snn":
        return neighbour_rows(state["neighbours"], P.H, X, state["kappa"])
    return ensemble_rows(P.H, state, X)
