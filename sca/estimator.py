"""The stochastic clustering algorithm as a scikit-learn estimator.

:class:`StochasticClustering` runs the same stages as :func:`sca.cluster`
(consensus, balancing to P = D S D, spectrum, iteration; Meyer & Wessell,
Fig. 3.1) and keeps the answer as fitted attributes.  ``affinity`` says what
X is: raw data (an ensemble of k-means runs, or the shared-nearest-neighbour
measure of Sec. 4.4, builds S), label runs (S = H H^T, never formed), or S
itself (:mod:`sca.affinity`).  On raw data, ``predict`` places new rows into
the fitted clustering with the functions the service's new-element queries
use (:mod:`sca.newrows`, :mod:`sca.placement`).  The parameters reach the
core as its options, and its errors come back under the parameters' names
(:mod:`sca.estimator_parameters`).
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from .affinity import (
    AFFINITIES,
    DEFAULT_SNN_NEIGHBORS,
    RAW_DATA,
    affinity_operator,
    affinity_rows,
)
from .clustering import DEFAULT_MAX_ITERATIONS, DEFAULT_STABLE, DEFAULT_STARTS
from .diagnostics import confidence
from .errors import SCAError
from .estimator_parameters import as_parameters, check_options, seed_of
from .options import OPTIONS, check
from .pipeline import run_stages
from .placement import predict as place_rows
from .spectral import DEFAULT_RULE

try:
    from sklearn.utils.validation import validate_data
except ImportError:  # scikit-learn < 1.6

    def validate_data(estimator, X, **kwargs):
        return estimator._validate_data(X, **kwargs)


# The affinities were declared here before they had a module of their own.
__all__ = ["AFFINITIES", "DEFAULT_SNN_NEIGHBORS", "RAW_DATA", "StochasticClustering"]


class StochasticClustering(ClusterMixin, BaseEstimator):
    """Stochastic data clustering (Meyer & Wessell): consensus, balancing, spectrum, iteration.

    The consensus S of an ensemble of clusterings is balanced to a doubly
    stochastic P = D S D (Sec. 2.2-2.3); the number of clusters is read from
    P's spectrum (Sec. 2.4); the clusters come from the evolution
    x_t^T = x_{t-1}^T P (Sec. 3).  The stages and their defaults are those
    of :func:`sca.cluster`; the docs' options table (docs/guide/options.md)
    describes them.

    Parameters
    ----------
    n_clusters : int, default=None
        The number of clusters, 1 <= n_clusters <= n.  None: chosen from the
        spectrum by ``rule`` (k = 1, "no cluster structure", is a possible
        answer).  The core's option ``k``.  On raw data clustered by
        k-means, ``"noise"`` compares P's spectrum with that of reference
        data without clusters run through the same ensemble
        (:mod:`sca.reference`); ``notes_`` says why k was chosen.
    affinity : {"ensemble", "snn", "labels", "precomputed"}, default="ensemble"
        What X is.

        - ``"ensemble"``: raw data (rows = elements); S is the consensus of
          the ``ensemble`` run on it.
        - ``"snn"``: raw data; S counts shared nearest neighbours (Sec. 4.4,
          "Using a single measure") among ``n_neighbors`` under ``metric``.
        - ``"labels"``: label runs, an ``n x r`` integer matrix (one column
          per clustering; negative = element left out of that run); S = H H^T
          with H the 0/1 membership matrix, never formed.
        - ``"precomputed"``: S itself, ``n x n``, symmetric, nonnegative with
          a positive diagonal (a consensus or any similarity); dense or sparse.
    ensemble : list of dict, default=None
        With ``affinity="ensemble"``: ``[{"algorithm": "kmeans" | "nmf" | "single",
        "k": int or list of int, "runs": int}, ...]`` as for
        :func:`sca.ensemble_labels`.  None: :func:`default_ensemble`
        (four k-means runs at each k from 2 to about sqrt(n), within [10, 40]).
    n_neighbors : int, default=None
        With ``affinity="snn"``: κ, the neighbours of each element,
        1 <= κ < n.  None: min(10, n - 1).
    metric : str, default="euclidean"
        With ``affinity="snn"``: the distance of the neighbours (a metric of
        :class:`sklearn.neighbors.NearestNeighbors`).
    scale : {"standard", "none"}, default="standard"
        With raw data (``"ensemble"``, ``"snn"``): how X's columns are
        scaled before S is built (:func:`sca.inputs.column_scaler`).
        ``"standard"`` centres each column and divides it by its standard
        deviation (a constant column is only centred; with NMF in the
        ensemble the columns are only divided, as NMF needs nonnegative
        data): otherwise a column in larger units alone decides the k-means
        and neighbour distances.  ``"none"`` takes X as given, for columns
        already in one unit.  ``predict`` scales new rows with the scaler
        fitted here.
    rule : {"noise", "gap", "perron"}, default="noise"
        How k is read from the spectrum when ``n_clusters`` is None:
        eigenvalues above the noise floor of a null reference (``"noise"``),
        the largest gap among λ_min_k ... λ_max_k (``"gap"``), or the Perron
        cluster of Definition 2.9 (``"perron"``, the paper's).
    split : {"kmeans", "gaps"}, default="kmeans"
        How the iterates are cut into clusters: k-means on the rows of a
        block of k - 1 iterates (``"kmeans"``), or one x_t cut at its k - 1
        largest gaps (``"gaps"``, the paper's Fig. 3.1).
    k_hat : int, default=None
        How many of P's largest eigenvalues to compute (Sec. 3).  None: all
        when cheap, else grown until one falls below the noise floor.
    min_k, max_k : int, default=None
        Bounds on the k that ``rule`` may choose.
    starts : int, default=1
        Random initial vectors; with more than one, ``membership_`` is the
        share of starts placing each element in each cluster.
    stable : int, default=6
        Consecutive identical clusterings that end a start.
    max_iterations : int, default=1000
        Iteration cap of a start.
    reconsensus : bool, default=False
        While the starts disagree, cluster the consensus of their solutions
        again (at most 10 rounds).
    random_state : int, RandomState instance or None, default=None
        Seeds the ensemble, the null reference of ``rule="noise"`` and the
        starts.  An int is used as the core's ``seed`` as it is, so
        ``random_state=7`` gives the clustering of ``sca.cluster(...,
        options={"seed": 7})``; a RandomState (or None, numpy's global one)
        draws the seed.

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
        Cluster of each element, 0 ... n_clusters_ - 1, numbered in order of
        first appearance.
    n_clusters_ : int
        The number of clusters found (or ``n_clusters`` when given).
    eigenvalues_ : ndarray of shape (k_hat,)
        P's largest eigenvalues, descending (λ1 = 1).
    membership_ : ndarray of shape (n_samples, n_clusters_)
        With ``starts`` > 1, the share of starts placing each element in each
        cluster of ``labels_`` (clusters matched across starts); with one
        start, the one-hot matrix of ``labels_``.  Rows sum to 1.
    confidence_ : ndarray of shape (n_samples,)
        For each element, the probability that one step of the walk P stays
        in its own cluster (its row sum of P over the cluster; Definition 2.7
        seen from one element).
    cluster_confidence_ : ndarray of shape (n_clusters_,)
        The mean of ``confidence_`` over each cluster.
    scaler_ : sca.inputs.Scaling
        With raw data: the ``scale`` option fitted on X (its ``transform``
        scales new rows as X was scaled).
    noise_floor_ : float or None
        The noise floor of ``rule="noise"`` (None for the other rules and
        below n = 30, where k counts the eigenvalues above 1/2).
    notes_ : list of str
        Plain-words remarks of the spectral stage (e.g. "no cluster structure").
    n_iter_ : int
        Steps of the iteration stage.
    n_features_in_ : int
        Columns of X seen in ``fit`` (n for ``"precomputed"``, r for ``"labels"``).
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Column names of X, when X has string column names.

    Notes
    -----
    ``predict`` (raw data only) places each new row on its own, as the
    service's new-element queries do: the fitted ensemble's k-means centres
    (or the SNN neighbourhoods) give its consensus row against the fitted
    elements, the balancing's scaling is extended to it with the old one
    fixed, and it joins the cluster holding the largest share of its row of
    the extended P against what the cluster's own members keep there
    (:mod:`sca.placement`).  The clustering itself is not changed.

    Examples
    --------
    >>> import numpy as np, sca
    >>> S = np.array([[100, 67, 73, 2, 0, 2], [67, 100, 50, 1, 2, 7],
    ...               [73, 50, 100, 15, 9, 24], [2, 1, 15, 100, 92, 82],
    ...               [0, 2, 9, 92, 100, 77], [2, 7, 24, 82, 77, 100]])
    >>> sca.StochasticClustering(affinity="precomputed", random_state=0).fit_predict(S)
    array([0, 0, 0, 1, 1, 1])
    """

    def __init__(
        self,
        n_clusters=None,
        *,
        affinity="ensemble",
        ensemble=None,
        n_neighbors=None,
        metric="euclidean",
        scale=OPTIONS["scale"].default,
        rule=DEFAULT_RULE,
        split="kmeans",
        k_hat=None,
        min_k=None,
        max_k=None,
        starts=DEFAULT_STARTS,
        stable=DEFAULT_STABLE,
        max_iterations=DEFAULT_MAX_ITERATIONS,
        reconsensus=False,
        random_state=None,
    ):
        self.n_clusters = n_clusters
        self.affinity = affinity
        self.ensemble = ensemble
        self.n_neighbors = n_neighbors
        self.metric = metric
        self.scale = scale
        self.rule = rule
        self.split = split
        self.k_hat = k_hat
        self.min_k = min_k
        self.max_k = max_k
        self.starts = starts
        self.stable = stable
        self.max_iterations = max_iterations
        self.reconsensus = reconsensus
        self.random_state = random_state

    def fit(self, X, y=None):
        """Cluster X (what X is depends on ``affinity``).

        Parameters
        ----------
        X : array-like or sparse matrix
            Raw data ``(n_samples, n_features)`` for ``"ensemble"`` and
            ``"snn"``; label runs ``(n_samples, n_runs)`` for ``"labels"``;
            S ``(n_samples, n_samples)`` for ``"precomputed"`` (sparse
            accepted).
        y : None
            Ignored.

        Returns
        -------
        StochasticClustering
            The fitted estimator (``labels_``, ``n_clusters_``, ... set).

        Raises
        ------
        SCAError
            When a parameter or X is invalid; ``field`` names the estimator's
            parameter (``"n_clusters"``, ``"affinity"``, ...) or the input.
        BalancingError
            When balancing stops at its iteration cap (Sec. 2.2).
        IterationError
            When no start of the iteration settles within ``max_iterations``.
        """
        if self.affinity not in AFFINITIES:
            raise SCAError(
                f"affinity must be one of {AFFINITIES}, got {self.affinity!r}", "affinity"
            )
        precomputed = self.affinity == "precomputed"
        X = validate_data(
            self,
            X,
            accept_sparse=("csr", "csc", "coo") if precomputed else False,
            ensure_min_samples=2,
        )
        n = X.shape[0]
        seed = seed_of(self.random_state)
        options = {
            "k": self.n_clusters,
            "k_hat": self.k_hat,
            "min_k": self.min_k,
            "max_k": self.max_k,
            "rule": self.rule,
            "split": self.split,
            "starts": self.starts,
            "stable": self.stable,
            "max_iterations": self.max_iterations,
            "reconsensus": self.reconsensus,
            "seed": seed,
        }
        with as_parameters():
            check_options(n, options)
            check("scale", self.scale)  # refused before any work, whatever the affinity
            S, raw, placement = affinity_operator(
                self.affinity, X, seed, self.ensemble, self.n_neighbors, self.metric, self.scale
            )
            balanced, spec, result, _ = run_stages(S, options, raw=raw)
        labels = result.labels.astype(np.int64)
        k = int(labels.max()) + 1
        firm = confidence(balanced.P, labels)
        self.labels_ = labels
        self.n_clusters_ = k
        self.eigenvalues_ = np.asarray(spec.eigenvalues, dtype=float)
        self.membership_ = result.membership if result.membership is not None else np.eye(k)[labels]
        self.confidence_ = firm["elements"]
        self.cluster_confidence_ = firm["clusters"]
        self.noise_floor_ = spec.floor
        self.notes_ = list(spec.notes)
        self.n_iter_ = int(result.iterations)
        if raw is not None:
            self.scaler_ = raw.scaling
            # what predict reads: new rows meet the balanced P of the fitted elements
            self._placement = {**placement, "P": balanced.P}
        return self

    def _predicts(self) -> bool:
        if self.affinity not in RAW_DATA:
            raise AttributeError(
                f"predict places new rows of raw data: it needs affinity in {RAW_DATA}, "
                f"not {self.affinity!r}"
            )
        return True

    @available_if(_predicts)
    def predict(self, X):
        """The fitted cluster of each new row of raw data, the fitted elements fixed.

        Each row is placed on its own, as the service's new-element queries
        place one: scaled by ``scaler_`` (never refitted), labelled by each
        run of the fitted ensemble (nearest k-means centre; NMF coefficients;
        nearest subsample point of a single-linkage run)
        or given its ``n_neighbors`` nearest fitted elements (``"snn"``),
        which yields its consensus row s against the fitted elements and its
        self-similarity (:mod:`sca.newrows`).  The balancing's scaling d
        (Sec. 2.2-2.3) is extended to it with d fixed, and it joins the
        cluster c maximising m_c / f_c, with m_c its row's mass on c in the
        extended P and f_c the ``cluster_confidence_`` of c
        (:func:`sca.placement.predict`).  Only with ``affinity`` ``"ensemble"``
        or ``"snn"``.

        Parameters
        ----------
        X : array-like of shape (n_new, n_features_in_)
            New rows, in the columns and units of the X given to ``fit``.

        Returns
        -------
        labels : ndarray of shape (n_new,)
            Each row's cluster, numbered as ``labels_``.
        """
        check_is_fitted(self)
        X = self.scaler_.transform(validate_data(self, X, reset=False))
        rows, selfs = affinity_rows(self.affinity, self._placement, X)
        clusters, _ = place_rows(
            self._placement["P"], self.labels_, rows, selfs, typical=self.cluster_confidence_
        )
        return clusters

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        if self.affinity == "precomputed":
            tags.input_tags.pairwise = True
            tags.input_tags.positive_only = True
            tags.input_tags.sparse = True
        if self.affinity == "labels":
            tags.input_tags.categorical = True
        return tags

    def _more_tags(self):  # scikit-learn < 1.6
        return {
            "pairwise": self.affinity == "precomputed",
            "requires_positive_X": self.affinity == "precomputed",
            "X_types": ["2darray", "categorical"]
            if self.affinity == "labels"
            else ["2darray", "sparse"]
            if self.affinity == "precomputed"
            else ["2darray"],
        }
