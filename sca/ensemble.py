"""Clustering ensembles on raw data (Meyer & Wessell, Sec. 1 and Sec. 5).

An ensemble spec is a list of ``{"algorithm": "kmeans" | "nmf" | "single",
"k": int or list of ints, "runs": int}``; several items give the paper's
"Combined" ensembles.  ``"single"`` is single linkage on a subsample
(:mod:`sca.density`), for groups that are not convex.  :func:`ensemble_plan`
expands a spec into independent, JSON-able run descriptors (one seed each)
so that a worker pool can fan them out; :func:`ensemble_run` performs one.

Every run uses one BLAS and one OpenMP thread (:func:`sca.operators.kernels.single_threaded`):
the runs, not the threads inside one run, are spread over the cores, by
:func:`ensemble_labels` and :func:`ensemble_fit` here and by the worker's
per-run tasks.  A run's result depends on its descriptor alone, so it is the
same whichever process or thread performs it.
"""

from __future__ import annotations

import warnings

import numpy as np

from .density import DENSITY_ALGORITHMS, density_model, density_predict, subsample_size
from .errors import SCAError
from .inputs import check_data
from .operators.kernels import single_threaded
from .options import ALGORITHMS
from .pool import spread

#: Iteration cap of one multiplicative-update NMF run.
NMF_MAX_ITER = 500
#: Above this many elements a k-means run fits its centres on this many rows,
#: drawn from the run's seed, and labels every element by its nearest centre.
KMEANS_SUBSAMPLE = 10_000
#: The default ensemble's k-means levels reach about sqrt(n) (Fred & Jain), within these bounds.
DEFAULT_ENSEMBLE_MAX_K = (10, 40)
#: Runs of the default ensemble per level.
DEFAULT_ENSEMBLE_RUNS = 4


def default_ensemble(n: int) -> list[dict]:
    """The ensemble used on raw data when none is given: k-means at k = 2 ... about sqrt(n).

    Four runs at each k from 2 to ``ceil(sqrt(n))``, bounded to
    [10, 40] and to n / 2 (runs into singletons say nothing): a "Combined"
    ensemble over several k (Sec. 5), whose consensus holds together what
    stays together across levels of detail.  Levels up to about sqrt(n), as
    in Fred & Jain's evidence accumulation, let many groups show (20 groups
    cannot show in runs that cut at most 10); the coarse levels let few
    groups show.  k-means, not NMF, so that data of any sign is accepted,
    and so that reference data run through the same ensemble give the null
    of :mod:`sca.reference`.

    Examples
    --------
    >>> [(spec["k"][0], spec["k"][-1], spec["runs"]) for spec in default_ensemble(400)]
    [(2, 20, 4)]
    """
    low, high = DEFAULT_ENSEMBLE_MAX_K
    top = min(int(np.clip(np.ceil(np.sqrt(n)), low, high)), max(2, n // 2))
    return [{"algorithm": "kmeans", "k": list(range(2, top + 1)), "runs": DEFAULT_ENSEMBLE_RUNS}]


def ensemble_items(spec) -> list[tuple[str, list[int], int]]:
    """The spec's items as ``(algorithm, ks, runs)``, validated."""
    if isinstance(spec, dict):
        spec = [spec]
    if not isinstance(spec, (list, tuple)) or not spec:
        raise SCAError("ensemble must be a non-empty list of {algorithm, k, runs}", "ensemble")
    items = []
    for i, item in enumerate(spec):
        field = f"ensemble[{i}]"
        if not isinstance(item, dict):
            raise SCAError(f"{field} must be an object {{algorithm, k, runs}}", field)
        unknown = set(item) - {"algorithm", "k", "runs"}
        if unknown:
            raise SCAError(f"{field} has unknown keys {sorted(unknown)}", field)
        algorithm = item.get("algorithm")
        if algorithm not in ALGORITHMS:
            raise SCAError(
                f"{field}.algorithm must be one of {ALGORITHMS}, got {algorithm!r}",
                f"{field}.algorithm",
            )
        ks = item.get("k")
        ks = [ks] if isinstance(ks, (int, np.integer)) else ks
        if (
            not isinstance(ks, (list, tuple))
            or not ks
            or not all(
                isinstance(k, (int, np.integer)) and not isinstance(k, bool) and k >= 1 for k in ks
            )
        ):
            raise SCAError(f"{field}.k must be a positive integer or a list of them", f"{field}.k")
        count = item.get("runs")
        if not isinstance(count, (int, np.integer)) or isinstance(count, bool) or count < 1:
            raise SCAError(
                f"{field}.runs must be a positive integer, got {count!r}", f"{field}.runs"
            )
        items.append((algorithm, [int(k) for k in ks], int(count)))
    return items


def needs_nonnegative(spec) -> bool:
    """Whether the spec has NMF runs, which need nonnegative data (so its
    columns may be divided, not centred: :func:`sca.inputs.fit_scaling`)."""
    return any(algorithm == "nmf" for algorithm, _, _ in ensemble_items(spec))


def ensemble_size(spec) -> int:
    """The number of runs ``spec`` asks for, counted without expanding it
    (a spec of a few bytes can ask for billions)."""
    return sum(len(ks) * count for _, ks, count in ensemble_items(spec))


def ensemble_plan(spec, seed: int = 0) -> list[dict]:
    """Expand an ensemble spec into run descriptors ``{"algorithm", "k", "seed"}``.

    The descriptors are independent and JSON-able (one seed each), so that a
    worker pool can fan them out.

    Parameters
    ----------
    spec : dict or list of dict
        The ensemble: items ``{"algorithm": "kmeans" | "nmf" | "single", "k":
        int or list of ints, "runs": int}``; several items give the paper's "Combined"
        ensembles (Sec. 5).
    seed : int, default 0
        Seeds the runs' seeds (``numpy.random.SeedSequence``).

    Returns
    -------
    list of dict
        One descriptor per run, item by item, each k in turn, ``runs`` times.

    Raises
    ------
    SCAError
        When ``spec`` is malformed; ``field`` is ``"ensemble"`` or names the
        item and key (e.g. ``"ensemble[0].k"``).

    See Also
    --------
    ensemble_run : Performs one descriptor.
    """
    runs = [
        {"algorithm": algorithm, "k": k}
        for algorithm, ks, count in ensemble_items(spec)
        for k in ks
        for _ in range(count)
    ]
    seeds = np.random.SeedSequence(int(seed)).generate_state(len(runs), dtype=np.uint32)
    for run, run_seed in zip(runs, seeds):
        run["seed"] = int(run_seed)
    return runs


def check_ensemble_data(X, plan: list[dict]) -> np.ndarray:
    """Data-dependent checks: k below n; NMF needs nonnegative data."""
    X = check_data(X)
    n = X.shape[0]
    worst_k = max(run["k"] for run in plan)
    if worst_k > n:
        raise SCAError(f"ensemble k = {worst_k} exceeds the number of elements n = {n}", "ensemble")
    if any(run["algorithm"] == "nmf" for run in plan) and X.min() < 0:
        raise SCAError(f"NMF needs nonnegative data; data has minimum {X.min():g}", "data")
    return X


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
    sample's centres, on all the rows, is within a fraction of a percent of a
    full run's; a larger sample costs more and comes little closer.  NMF runs
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
        The runs' models stacked (:func:`ensemble_model`).
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


def ensemble_work(X, plan: list[dict]) -> float:
    """The plan's work on X, for :func:`sca.pool.spread`: rows x columns x the
    sum of the runs' k (a k-means iteration's multiply-adds; NMF's alike), and
    a single-linkage run's subsample size squared x columns."""
    rows = min(X.shape[0], KMEANS_SUBSAMPLE)
    centred = sum(run["k"] for run in plan if run["algorithm"] not in DENSITY_ALGORITHMS)
    linked = sum(run["algorithm"] in DENSITY_ALGORITHMS for run in plan)
    return float(X.shape[1]) * (rows * centred + linked * subsample_size(X.shape[0]) ** 2)


def _fit_runs(X, plan: list[dict], n_jobs: int | None, progress) -> list[tuple]:
    """:func:`ensemble_model` of every run of ``plan``, in the plan's order.

    The runs are spread over the cores by :func:`sca.pool.spread`: on worker
    processes, each with a GIL of its own (scikit-learn's per-run Python holds
    one process's GIL: two threads ran a 1,000-row ensemble no faster than one),
    or on threads where no process may be started.  ``progress(done, total)``
    is called on this thread as runs finish; if it (or a run) raises, the runs
    not yet started are dropped.
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
    fitted = _fit_runs(X, plan, n_jobs, progress)
    labels = np.empty((X.shape[0], len(plan)), dtype=np.int32)
    for j, (run_labels, _) in enumerate(fitted):
        labels[:, j] = run_labels
    return labels


def stacked_models(models) -> tuple[np.ndarray, np.ndarray]:
    """The runs' models stacked, and ``groups``: run j owns rows ``groups[j]:groups[j+1]``."""
    models = list(models)
    return np.concatenate(models), np.concatenate([[0], np.cumsum([m.shape[0] for m in models])])


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
    fitted = _fit_runs(X, plan, n_jobs, progress)
    return {
        "labels": np.column_stack([labels for labels, _ in fitted]),
        **dict(zip(("models", "groups"), stacked_models([model for _, model in fitted]))),
        "algorithms": np.array([run["algorithm"] for run in plan]),
    }
