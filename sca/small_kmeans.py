"""scikit-learn's k-means, step for step, for the few rows of a small job's iterates.

The iteration's split (:class:`sca.splits.KMeansSplit`) fits k-means on
the rows of each iterate, two fits a step.  On a job of a few dozen elements
:class:`sklearn.cluster.KMeans` spends nearly all of a fit in its fixed cost
per call (input and parameter validation, a new random state, thread pool
limits, OpenMP set-up), many times the arithmetic, and those fits were most
of a small job's time.  :class:`SmallKMeans` is the same algorithm on the same
random stream (scikit-learn 1.4 and later, dense input, unit weights):

* k-means++ with ``2 + ln k`` local trials per centre, its draws from
  ``numpy.random.RandomState(seed)`` in scikit-learn's order (Arthur &
  Vassilvitskii, SODA 2007);
* Lloyd's iterations on the centred rows until the labels repeat or the
  centres move less than ``tol`` times the mean variance of the columns, an
  empty cluster moved to the row farthest from its centre, then a last
  assignment to the final centres;
* of ``n_init`` runs, a later one kept only with a smaller inertia and a
  different partition.

So it finds the clusters scikit-learn finds, up to the rounding of sums
taken in another order (a row equidistant from two centres to the last bit);
``tests/core/test_small_kmeans.py`` compares the two.  Large inputs keep
scikit-learn's KMeans, whose compiled, threaded loops win there.
"""

from __future__ import annotations

from functools import lru_cache, partial

import numpy as np

from .operators import threads

#: From this many rows a seeding's distances are cut over the cores (when asked).
CUT_ROWS = 2048


@lru_cache(maxsize=64)
def _draws(seed: int, count: int) -> np.ndarray:
    """The first ``count`` uniform draws of ``numpy.random.RandomState(seed)``: all
    k-means++ takes from it (``choice`` with weights and ``uniform`` each draw one
    double after another), kept because seeding a RandomState costs more than a
    small fit."""
    draws = np.random.RandomState(seed).random_sample(count)
    draws.flags.writeable = False
    return draws


def _squared_distances(
    C: np.ndarray, X: np.ndarray, x_norms: np.ndarray, cut: bool = False
) -> np.ndarray:
    """``|c - x|^2`` for each row c of C and x of X, as scikit-learn expands it;
    with ``cut``, from :data:`CUT_ROWS` rows, each core its share of X's rows."""
    c_norms = np.einsum("ij,ij->i", C, C)[:, None]
    parts = threads.THREADS if cut and X.shape[0] >= CUT_ROWS else 1
    if parts == 1:
        return _distances_into(C, X, x_norms, c_norms)
    out = np.empty((C.shape[0], X.shape[0]))
    edges = np.linspace(0, X.shape[0], parts + 1).astype(np.int64).tolist()
    threads.parallel(
        [
            partial(_distances_into, C, X[lo:hi], x_norms[lo:hi], c_norms, out[:, lo:hi])
            for lo, hi in zip(edges[:-1], edges[1:])
        ]
    )
    return out


def _distances_into(C, X, x_norms, c_norms, out=None) -> np.ndarray:
    """:func:`_squared_distances` of all of X's rows, into ``out`` if given."""
    d = -2 * (C @ X.T)
    d += c_norms
    d += x_norms[None, :]
    if out is None:
        return np.maximum(d, 0, out=d)
    np.maximum(d, 0, out=out)
    return out


def _trials(k: int) -> int:
    """Candidates drawn for each centre after the first."""
    return 2 + int(np.log(k))


def _kmeans_plusplus(X: np.ndarray, k: int, x_norms: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """Greedy k-means++ seeding (scikit-learn's ``_kmeans_plusplus``, unit weights) on
    the uniform ``draws`` (1 + (k - 1) * :func:`_trials` of them)."""
    return X[_plusplus_rows(X, k, x_norms, draws)]


def _plusplus_rows(
    X: np.ndarray, k: int, x_norms: np.ndarray, draws: np.ndarray, cut: bool = False
) -> np.ndarray:
    """The rows of X :func:`_kmeans_plusplus` picks, in order (``cut``: see
    :func:`_squared_distances`)."""
    n = X.shape[0]
    weights = np.ones(n)
    trials = _trials(k)
    rows = np.empty(k, dtype=np.int64)
    # RandomState.choice(n, p=weights / weights.sum()), on its one draw
    cdf = (weights / weights.sum()).cumsum()
    cdf /= cdf[-1]
    rows[0] = int(cdf.searchsorted(draws[0], side="right"))
    closest = _squared_distances(X[rows[:1]], X, x_norms, cut)
    potential = closest @ weights
    for c in range(1, k):
        draws_c = draws[1 + (c - 1) * trials : 1 + c * trials] * potential
        candidates = np.searchsorted(np.cumsum(weights * closest), draws_c)
        np.clip(candidates, None, n - 1, out=candidates)
        distances = _squared_distances(X[candidates], X, x_norms, cut)
        np.minimum(closest, distances, out=distances)
        potentials = distances @ weights.reshape(-1, 1)
        best = int(np.argmin(potentials))
        potential, closest = potentials[best], distances[best]
        rows[c] = candidates[best]
    return rows


def plusplus_rows(X: np.ndarray, k: int, seed: int, run: int, cut: bool = False) -> np.ndarray:
    """The rows of X that :class:`sklearn.cluster.KMeans` ``(k, random_state=seed)``
    seeds its ``run``-th run with (k-means++, from 0; dense rows, unit weights).

    Its runs draw one after another from one ``RandomState(seed)``, each
    ``1 + (k - 1) * (2 + ln k)`` uniforms, so each run's seeding is known
    without the runs before it, and the runs can be fitted side by side.

    Parameters
    ----------
    X : ndarray of shape (n, b)
        The rows (n >= k), as given to scikit-learn (it centres them; so does this).
    k : int
        The number of clusters.
    seed : int
        scikit-learn's ``random_state``.
    run : int
        Which of the ``n_init`` runs.
    cut : bool, default False
        Cut each seeding step's distances over the cores (from :data:`CUT_ROWS` rows).

    Returns
    -------
    ndarray of int64, shape (k,)
        The rows, in the order chosen: ``KMeans(k, init=X[rows], n_init=1)`` then
        fits as that run does.
    """
    X = np.array(X, dtype=float, order="C")
    X -= X.mean(axis=0)
    per_run = 1 + (k - 1) * _trials(k)
    draws = _draws(seed, (run + 1) * per_run)[run * per_run :]
    return _plusplus_rows(X, k, np.einsum("ij,ij->i", X, X), draws, cut)


def _assign(X: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """Each row's nearest centre (the first on a tie), as scikit-learn's Lloyd step."""
    d = -2 * (X @ centres.T)
    d += np.einsum("ij,ij->i", centres, centres)[None, :]
    return np.argmin(d, axis=1).astype(np.int32)


def _lloyd(X: np.ndarray, centres: np.ndarray, tol: float, max_iter: int):
    """One run of Lloyd's algorithm from ``centres`` (scikit-learn's
    ``_kmeans_single_lloyd``): labels, inertia, centres."""
    k = centres.shape[0]
    labels_old = np.full(X.shape[0], -1, dtype=np.int32)
    strict = False
    for _ in range(max_iter):
        labels = _assign(X, centres)
        sizes = np.bincount(labels, minlength=k).astype(float)
        sums = np.zeros_like(centres)
        np.add.at(sums, labels, X)
        empty = np.flatnonzero(sizes == 0)
        if empty.size:
            far_from = ((X - centres[labels]) ** 2).sum(axis=1)
            if far_from.max() > 0:
                # the rows farthest from their centres, farthest first
                far = np.argpartition(far_from, -empty.size)[: -empty.size - 1 : -1]
                for cluster, row in zip(empty, far):
                    sums[labels[row]] -= X[row]
                    sums[cluster] = X[row]
                    sizes[cluster] = 1
                    sizes[labels[row]] -= 1
        # times the reciprocal, as scikit-learn averages (the same rounding)
        new = sums * np.where(sizes > 0, 1.0 / np.maximum(sizes, 1), 1.0)[:, None]
        shift = np.sqrt(((new - centres) ** 2).sum(axis=1))
        centres = new
        if np.array_equal(labels, labels_old):
            strict = True
            break
        if (shift**2).sum() <= tol:
            break
        labels_old = labels
    if not strict:
        labels = _assign(X, centres)
    inertia = float(np.cumsum(((X - centres[labels]) ** 2).sum(axis=1))[-1])  # summed in order
    return labels, inertia, centres


def same_partition(a: np.ndarray, b: np.ndarray, k: int) -> bool:
    """Whether each cluster of ``a`` lies within one of ``b`` (scikit-learn's test of
    one partition up to renaming)."""
    mapping = np.full(k, -1, dtype=np.int32)
    mapping[a] = b
    return bool(np.array_equal(mapping[a], b))


class SmallKMeans:
    """:class:`sklearn.cluster.KMeans` (Lloyd, dense rows, unit weights) in numpy, for few rows.

    Parameters
    ----------
    n_clusters : int
        The number of clusters k.
    init : ndarray of shape (k, b) or None, default None
        Starting centres; None for k-means++ seeding.
    n_init : int, default 1
        Runs from k-means++ seedings (1 with given centres); the best is kept.
    random_state : int, default 0
        Seeds ``numpy.random.RandomState``, as scikit-learn does.
    max_iter : int, default 300
        Lloyd iterations at most per run.
    tol : float, default 1e-4
        Convergence when the centres move (squared, summed) less than ``tol``
        times the mean variance of the columns.

    Attributes
    ----------
    cluster_centers_ : ndarray of shape (k, b)
        The centres of the best run.
    labels_ : ndarray of int32, shape (n,)
        Each fitted row's cluster.
    inertia_ : float
        The sum of squared distances of the rows to their centres.

    See Also
    --------
    sklearn.cluster.KMeans : The algorithm this follows.
    """

    #: Rows up to which it is used: there it costs a fraction of scikit-learn's
    #: call, and scikit-learn sums each cluster's rows in one chunk, in order, as here.
    ROWS = 256

    def __init__(
        self,
        n_clusters: int,
        init: np.ndarray | None = None,
        n_init: int = 1,
        random_state: int = 0,
        max_iter: int = 300,
        tol: float = 1e-4,
    ):
        self.n_clusters, self.init, self.n_init = n_clusters, init, n_init
        self.random_state, self.max_iter, self.tol = random_state, max_iter, tol

    def fit(self, X: np.ndarray) -> SmallKMeans:
        """Cluster the rows of ``X`` (n x b, n >= k); returns self."""
        X = np.array(X, dtype=float, order="C")
        tol = float(np.mean(np.var(X, axis=0))) * self.tol
        mean = X.mean(axis=0)
        X -= mean
        x_norms = np.einsum("ij,ij->i", X, X)
        runs = 1 if self.init is not None else self.n_init
        per_run = 1 + (self.n_clusters - 1) * _trials(self.n_clusters)
        draws = _draws(self.random_state, runs * per_run) if self.init is None else None
        best = None
        for run in range(runs):
            start = (
                np.array(self.init, dtype=float) - mean
                if draws is None
                else _kmeans_plusplus(
                    X, self.n_clusters, x_norms, draws[run * per_run : (run + 1) * per_run]
                )
            )
            labels, inertia, centres = _lloyd(X, start, tol, self.max_iter)
            if best is None or (
                inertia < best[1] and not same_partition(labels, best[0], self.n_clusters)
            ):
                best = (labels, inertia, centres)
        assert best is not None
        self.labels_, self.inertia_ = best[0], best[1]
        self.cluster_centers_ = best[2] + mean
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        """The nearest centre of each row of ``X``."""
        return _assign(np.asarray(X, dtype=float), self.cluster_centers_)
