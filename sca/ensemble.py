"""Clustering ensembles on raw data: running the runs (Meyer & Wessell, Sec. 1 and Sec. 5).

A spec (:mod:`sca.ensemble_spec`) is expanded into run descriptors
``{"algorithm", "k", "seed"}`` (:func:`ensemble_plan`); :func:`ensemble_run`
and :func:`ensemble_model` perform one, :func:`ensemble_labels` and
:func:`ensemble_fit` a whole ensemble, whose label matrix gives the
consensus of Sec. 1.  ``"single"`` is single linkage on a subsample
(:mod:`sca.density`), for groups that are not convex.  What the runs learned
labels new rows later (:mod:`sca.ensemble_models`).  The spec's and the
models' names are re-exported here, where they were declared before.

Every run uses one BLAS and one OpenMP thread (:func:`sca.operators.kernels.single_threaded`):
the runs, not the threads inside one run, are spread over the cores, by
:func:`ensemble_labels` and :func:`ensemble_fit` here and by the worker's
per-run tasks.  A run's result depends on its descriptor alone, so it is the
same whichever process or thread performs it.
"""

from __future__ import annotations

import warnings

import numpy as np

from .density import DENSITY_ALGORITHMS, density_model, subsample_size
from .ensemble_models import ensemble_predict, stacked_models
from .ensemble_spec import (
    DEFAULT_ENSEMBLE_MAX_K,
    DEFAULT_ENSEMBLE_RUNS,
    check_ensemble_data,
    default_ensemble,
    ensemble_items,
    ensemble_plan,
    ensemble_size,
    needs_nonnegative,
)
from .errors import SCAError
from .operators.kernels import single_threaded
from .pool import spread

# The spec's and the models' names were declared here before they had modules of their own.
__all__ = [
    "DEFAULT_ENSEMBLE_MAX_K",
    "DEFAULT_ENSEMBLE_RUNS",
    "KMEANS_SUBSAMPLE",
    "NMF_MAX_ITER",
    "check_ensemble_data",
    "default_ensemble",
    "ensemble_fit",
    "ensemble_items",
    "ensemble_labels",
    "ensemble_model",
    "ensemble_plan",
    "ensemble_predict",
    "ensemble_run",
    "ensemble_size",
    "ensemble_work",
    "fit_runs",
    "needs_nonnegative",
    "stacked_models",
]

#: Iteration cap of one multiplicative-update NMF run.
NMF_MAX_ITER = 500
#: Above this many elements a k-means run fits its centres on this many rows,
#: drawn from the run's seed, and labels every element by its nearest centre.
KMEANS_SUBSAMPLE = 4_000


def ensemble_run(X, run: dict) -> np.ndarray:
    """One clustering of ``X`` (rows = elements) by ``run``.

    ``kmeans``: scikit-learn ``KMeans`` with one k-means++ initialisation.
    ``nmf``: Lee & Seung multiplicative updates (``NMF(solver="mu",
    init="random")``); an element's cluster is the argmax of its coefficients.
    ``single``: single linkage cut at k clusters on a subsample, every row in
    its nearest subsample point's cluster (:func:`sca.density.density_model`).

    Parameters
    ----------
    X : array_like of shape (n, m)
        The raw data, one row per element (nonnegative for NMF).
    run : dict
        A run descriptor ``{"algorithm", "k", "seed"}`` of :func:`ensemble_plan`.

    Returns
    -------
    ndarray of int32, shape (n,)
        The run's labels.

    Raises
    ------
    SCAError
        With ``field="ensemble"`` when the run's algorithm is unknown.

    See Also
    --------
    ensemble_model : The same, with what the run learned.
    """
    return ensemble_model(X, run)[0]


def ensemble_model(X, run: dict) -> tuple[np.ndarray, np.ndarray]:
    """The labels of :func:`ensemble_run` and what the run learned.

    With the model, :func:`ensemble_predict` labels new rows as the run would
    have.

    The run uses one BLAS and one OpenMP thread, whoever calls it.  Above
    :data:`KMEANS_SUBSAMPLE` elements, a k-means run fits its centres on that
    many rows drawn without replacement from its seed and labels every element
    by its nearest centre (as :func:`ensemble_predict` would), so that its cost
    grows with n only through that assignment.  The k-means objective of a
    sample's centres, on all the rows, is within one or two percent of a full
    run's at k up to 40 (about what two full runs from other seeds differ
    by); a larger sample costs more and comes little closer.  NMF runs
    always fit every row: with the components of a sample fixed, the
    coefficients of the other rows would still need an iterative solve per
    row, about what the full fit costs.

    Parameters
    ----------
    X : array_like of shape (n, m)
        The raw data, one row per element (nonnegative for NMF).
    run : dict
        A run descriptor ``{"algorithm", "k", "seed"}`` of :func:`ensemble_plan`.

    Returns
    -------
    labels : ndarray of int32, shape (n,)
        The run's labels.
    model : ndarray of shape (K, m)
        The k-means centres, NMF's components, or a single-linkage run's
        subsample cluster by cluster (:func:`sca.density.density_model`).

    Raises
    ------
    SCAError
        With ``field="ensemble"`` when the run's algorithm is unknown.
    """
    from sklearn import config_context
    from sklearn.cluster import KMeans  # scikit-learn loads when an ensemble runs
    from sklearn.decomposition import NMF
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.metrics import pairwise_distances_argmin

    X = np.asarray(X)
    k, seed = int(run["k"]), int(run["seed"])
    # the estimators' parameters come from a checked plan (ensemble_items): scikit-learn's
    # own check of them, on every run, is skipped (the data is still checked)
    with (
        warnings.catch_warnings(),
        single_threaded(),
        config_context(skip_parameter_validation=True),
    ):
        warnings.simplefilter("ignore", ConvergenceWarning)
        if run["algorithm"] == "kmeans":
            n = X.shape[0]
            if n <= KMEANS_SUBSAMPLE:
                model = KMeans(n_clusters=k, n_init=1, random_state=seed)
                labels = model.fit_predict(X).astype(np.int32)
                return labels, model.cluster_centers_
            rows = np.sort(np.random.default_rng(seed).choice(n, KMEANS_SUBSAMPLE, replace=False))
            model = KMeans(n_clusters=k, n_init=1, random_state=seed, copy_x=False)
            centres = model.fit(X[rows]).cluster_centers_
            return pairwise_distances_argmin(X, centres).astype(np.int32), centres
        if run["algorithm"] in DENSITY_ALGORITHMS:
            return density_model(X, k, seed)
        if run["algorithm"] == "nmf":
            model = NMF(
                n_components=k, solver="mu", init="random", random_state=seed, max_iter=NMF_MAX_ITER
            )
            labels = np.argmax(model.fit_transform(X), axis=1).astype(np.int32)
            return labels, model.components_
    raise SCAError(f"unknown algorithm {run['algorithm']!r}", "ensemble")


def ensemble_work(X, plan: list[dict]) -> float:
    """The plan's work on X, for :func:`sca.pool.spread`: rows x columns x the
    sum of the runs' k (a k-means iteration's multiply-adds; NMF's alike), and
    a single-linkage run's subsample size squared x columns."""
    rows = min(X.shape[0], KMEANS_SUBSAMPLE)
    centred = sum(run["k"] for run in plan if run["algorithm"] not in DENSITY_ALGORITHMS)
    linked = sum(run["algorithm"] in DENSITY_ALGORITHMS for run in plan)
    return float(X.shape[1]) * (rows * centred + linked * subsample_size(X.shape[0]) ** 2)


def fit_runs(X, plan: list[dict], n_jobs: int | None = None, progress=None) -> list[tuple]:
    """:func:`ensemble_model` of every run of ``plan``, in the plan's order.

    The runs are spread over the cores by :func:`sca.pool.spread`: on worker
    processes, each with a GIL of its own (scikit-learn's per-run Python holds
    one process's GIL: two threads ran a 1,000-row ensemble no faster than one),
    or on threads where no process may be started.

    Parameters
    ----------
    X : ndarray of shape (n, m)
        The data, checked (:func:`check_ensemble_data`).
    plan : list of dict
        Runs ``{"algorithm", "k", "seed"}`` (:func:`ensemble_plan`).
    n_jobs : int, optional
        Workers for the runs; None for one per core this process may use.
    progress : callable, optional
        ``progress(done, total)``, called on this thread as runs finish; if it
        (or a run) raises, the runs not yet started are dropped.

    Returns
    -------
    list of tuple
        ``(labels, model)`` of each run, in the plan's order.

    References
    ----------
    .. [1] C. D. Meyer and C. D. Wessell, Stochastic Data Clustering, Sec. 1
       (the runs whose consensus is S).
    """
    from sklearn.exceptions import ConvergenceWarning

    # Both held across all the runs of this process's threads, not only around
    # each.  BLAS's limit is the process's: put back between two runs while
    # another was under way, it multiplied the ensemble's CPU time (BLAS's own
    # threads, woken, spin beside the runs).  The warning filters are the
    # process's too: a run's own catch_warnings, left on one thread, restores a
    # list without its filter while another thread's run is still warning.
    with warnings.catch_warnings(), single_threaded():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return spread(
            ensemble_model, [(X, run) for run in plan], n_jobs, progress, ensemble_work(X, plan)
        )


def ensemble_labels(X, spec, seed: int = 0, progress=None, n_jobs: int | None = None) -> np.ndarray:
    """Run a whole ensemble and return its label matrix.

    The runs are spread over ``n_jobs`` workers (:func:`sca.pool.spread`:
    worker processes, or threads; None: one per core this process may use),
    each run on one BLAS/OpenMP thread; the labels are the
    same for any ``n_jobs``, each run having its own seed.

    Parameters
    ----------
    X : array_like of shape (n, m)
        The raw data, one row per element.
    spec : dict or list of dict
        The ensemble: items ``{"algorithm": "kmeans" | "nmf" | "single", "k":
        int or list of ints, "runs": int}``; several items give the paper's "Combined"
        ensembles (Sec. 5).
    seed : int, default 0
        Seeds the runs (:func:`ensemble_plan`).
    progress : callable, optional
        ``progress(done, total)`` is called after each run when given.
    n_jobs : int, optional
        Workers for the runs (:func:`sca.pool.spread`); None for one per core
        this process may use.

    Returns
    -------
    ndarray of int32, shape (n, r)
        One column of labels per run, in the plan's order.

    Raises
    ------
    SCAError
        When ``spec`` is malformed (``field`` is ``"ensemble"`` or names the
        item and key, e.g. ``"ensemble[0].k"``), a k exceeds n
        (``"ensemble"``), ``X`` is not finite numeric data or NMF meets
        negative data (``"data"``), or ``n_jobs`` is invalid (``"n_jobs"``).

    See Also
    --------
    membership_operator : The consensus of these labels.

    References
    ----------
    .. [1] C. D. Meyer and C. D. Wessell, Stochastic Data Clustering, Sec. 1
       (the consensus matrix of an ensemble) and Sec. 5.
    """
    plan = ensemble_plan(spec, seed)
    X = check_ensemble_data(X, plan)
    fitted = fit_runs(X, plan, n_jobs, progress)
    labels = np.empty((X.shape[0], len(plan)), dtype=np.int32)
    for j, (run_labels, _) in enumerate(fitted):
        labels[:, j] = run_labels
    return labels


def ensemble_fit(X, spec, seed: int = 0, progress=None, n_jobs: int | None = None) -> dict:
    """Run a whole ensemble, keeping what each run learned, for new rows later.

    :func:`ensemble_labels` and, besides, each run's model.

    Parameters
    ----------
    X : array_like of shape (n, m)
        The raw data, one row per element.
    spec : dict or list of dict
        The ensemble: items ``{"algorithm": "kmeans" | "nmf" | "single", "k":
        int or list of ints, "runs": int}``; several items give the paper's "Combined"
        ensembles (Sec. 5).
    seed : int, default 0
        Seeds the runs (:func:`ensemble_plan`).
    progress : callable, optional
        ``progress(done, total)`` is called after each run when given.
    n_jobs : int, optional
        Workers for the runs (:func:`sca.pool.spread`); None for one per core
        this process may use.

    Returns
    -------
    dict
        ``{"labels": n x r, "models", "groups", "algorithms"}``, the last
        three as :func:`ensemble_predict` takes them.

    Raises
    ------
    SCAError
        When ``spec`` is malformed (``field`` is ``"ensemble"`` or names the
        item and key, e.g. ``"ensemble[0].k"``), a k exceeds n
        (``"ensemble"``), ``X`` is not finite numeric data or NMF meets
        negative data (``"data"``), or ``n_jobs`` is invalid (``"n_jobs"``).
    """
    plan = ensemble_plan(spec, seed)
    X = check_ensemble_data(X, plan)
    fitted = fit_runs(X, plan, n_jobs, progress)
    return {
        "labels": np.column_stack([labels for labels, _ in fitted]),
        **dict(zip(("models", "groups"), stacked_models([model for _, model in fitted]))),
        "algorithms": np.array([run["algorithm"] for run in plan]),
    }
