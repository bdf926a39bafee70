"""How the iterates become clusters (Meyer & Wessell, Sec. 3, Fig. 3.1, step 5).

Each step of the iteration (:mod:`sca.iteration`) reads a clustering from its
iterates: :func:`gap_split` cuts the sorted entries of one x_t at its k-1
largest gaps (the paper's split), :class:`KMeansSplit` clusters the rows of a
block of b = k-1 iterates with k-means (the default, see :mod:`sca.iteration`),
:class:`PivotSplit` takes over from k-means where the clusters are many
(:func:`row_split`), and :func:`canonical` numbers the clusters of any of
them by first appearance, so that equal partitions are equal arrays.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import scipy.linalg

from .cholesky_qr import orthonormal
from .operators import threads
from .options import MANY_CENTRES
from .small_kmeans import SmallKMeans, plusplus_rows, same_partition

#: A cut whose gap is below this fraction of the spread of x_t is not a cut.
GAP_EPS = 1e-9


def canonical(labels: np.ndarray) -> np.ndarray:
    """Relabel clusters 0, 1, ... in order of first appearance."""
    labels = np.asarray(labels)
    n = labels.size
    if n and labels.dtype.kind in "iu" and 0 <= labels.min() and labels.max() < n:
        # small nonnegative integers (every split's output): no sort of the n labels
        first = np.full(int(labels.max()) + 1, n, dtype=np.int64)
        np.minimum.at(first, labels, np.arange(n))
        used = np.flatnonzero(first < n)
        rank = np.empty(first.size, dtype=np.int64)
        rank[used[np.argsort(first[used])]] = np.arange(used.size)
        return rank[labels]
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first)] = np.arange(first.size)
    return rank[inverse.ravel()]


def gap_split(x: np.ndarray, k: int) -> np.ndarray | None:
    """Cluster the entries of ``x`` by cutting its sorted list at the k-1 largest gaps.

    The paper's split of each x_t (Sec. 3, Fig. 3.1, step 5).  Ties between
    equal gaps go to the smaller entries.

    Parameters
    ----------
    x : ndarray of shape (n,)
        The vector whose entries are clustered.
    k : int
        The number of clusters.

    Returns
    -------
    ndarray of int, shape (n,) or None
        Canonical labels (clusters numbered by first appearance), or ``None``
        when a needed gap is (near) zero.

    See Also
    --------
    iterate : Runs the evolution whose iterates are split.

    References
    ----------
    .. [1] C. D. Meyer and C. D. Wessell, Stochastic Data Clustering, Sec. 3.
    """
    n = x.size
    if k == 1:
        return np.zeros(n, dtype=np.int64)
    order = np.argsort(x, kind="stable")
    values = x[order]
    gaps = np.diff(values)
    spread = values[-1] - values[0]
    cuts = np.sort(np.argsort(-gaps, kind="stable")[: k - 1])
    if spread <= 0 or gaps[cuts].min() <= GAP_EPS * spread:
        return None
    labels = np.empty(n, dtype=np.int64)
    labels[order] = np.searchsorted(cuts, np.arange(n), side="left")
    return canonical(labels)


class KMeansSplit:
    """k-means on the rows of a block, warm-started from the previous centres.

    The centres are fitted on a fixed sample of rows (x_t changes little from
    one step to the next) and every row is then assigned to its nearest
    centre, so a step costs O(n k b) rather than a full k-means.
    """

    #: Distances between rows depend on the block's basis: it must be orthonormal.
    basis_free = False

    #: Rows of the sample at least ...
    SAMPLE = 4096
    #: ... and at least this many a centre: with 500 centres on 4,096 rows (about
    #: eight a centre) the split of 500 planted blocks scored an ARI of 0.97, with
    #: 20 a centre 0.99 in fewer steps (docs/performance.md).
    ROWS_PER_CENTRE = 20

    @classmethod
    def sample_size(cls, k: int) -> int:
        """Rows of the sample the centres of k clusters are fitted on."""
        return max(cls.SAMPLE, cls.ROWS_PER_CENTRE * int(k))

    def __init__(self, k: int, seed: int, n: int):
        self.k, self.seed, self.centres = k, seed, None
        rng = np.random.default_rng(seed)
        size = self.sample_size(k)
        self.sample = np.sort(rng.choice(n, size, replace=False)) if n > size else slice(None)

    def fit(self, sample: np.ndarray):
        """The k-means model of this step, fitted on the sampled rows."""
        # A fresh k-means++ fit and the previous centres refined: keep the
        # better, so neither a bad first start nor a stale optimum persists.
        # Four fresh starts at first; one a step once the previous centres
        # carry the best found so far.
        fresh = 4 if self.centres is None else 1
        if sample.shape[0] <= SmallKMeans.ROWS:
            # A small job's few rows: scikit-learn's fixed cost per call would be
            # most of the job; SmallKMeans is its algorithm on its random stream.
            models = [SmallKMeans(self.k, n_init=fresh, random_state=self.seed)]
            if self.centres is not None:
                models.append(SmallKMeans(self.k, init=self.centres, random_state=self.seed))
            best = min((m.fit(sample) for m in models), key=lambda m: m.inertia_)
            self.centres = best.cluster_centers_
            return best
        from sklearn.cluster import KMeans  # scikit-learn loads when a k-means split runs

        # Each fresh run seeded as scikit-learn's n_init runs would seed it, so the
        # runs and the refinement of the previous centres are fitted side by side,
        # one a core, each seeding where it is fitted; a lone fresh seeding is cut
        # over the cores before the fits.
        inits: list = list(range(fresh))
        if fresh < threads.THREADS:
            inits = [
                sample[plusplus_rows(sample, self.k, self.seed, run, cut=True)] for run in inits
            ]
        if self.centres is not None:
            inits.append(self.centres)
        models = [KMeans(self.k, n_init=1, random_state=self.seed) for _ in inits]
        threads.parallel(
            [
                partial(
                    _fit,
                    models[t :: threads.THREADS],
                    inits[t :: threads.THREADS],
                    self.seed,
                    sample,
                )
                for t in range(threads.THREADS)
            ]
        )
        # scikit-learn's choice among its runs: a later one only if better and not
        # the same partition; then the refinement only if better still
        best = models[0]
        for model in models[1:fresh]:
            if model.inertia_ < best.inertia_ and not same_partition(
                model.labels_, best.labels_, self.k
            ):
                best = model
        if self.centres is not None and models[-1].inertia_ < best.inertia_:
            best = models[-1]
        self.centres = best.cluster_centers_
        return best

    def __call__(self, Y: np.ndarray) -> np.ndarray | None:
        Y = Y.reshape(Y.shape[0], -1)
        best = self.fit(Y[self.sample])
        if isinstance(best, SmallKMeans):
            labels = best.predict(Y)
        else:
            labels = np.empty(Y.shape[0], dtype=np.int32)
            # each core its rows: the model keeps the fit's one thread for predict
            threads.parallel(
                [partial(_predict, best, Y, lo, hi, labels) for lo, hi in threads.spans(Y.shape[0])]
            )
        if np.count_nonzero(np.bincount(labels, minlength=self.k)) < self.k:
            return None
        return canonical(labels)


def _fit(models: list, inits: list, seed: int, sample: np.ndarray) -> None:
    """Fit the k-means ``models`` on ``sample``, one after another, each from its
    init (centres, or the scikit-learn run whose k-means++ seeding it takes), on
    one BLAS and one OpenMP thread: the other cores fit the others meanwhile."""
    from sklearn import config_context  # loaded with the models it fits

    # A few thousand rows, finite (the iteration's orthonormal blocks), our
    # parameters: scikit-learn's per-call checks, a sizeable share of a fit, are
    # skipped; the context is the calling thread's, as is OpenMP's limit.
    with config_context(assume_finite=True, skip_parameter_validation=True):
        with threads.single_threaded():
            for model, init in zip(models, inits):
                if isinstance(init, int):
                    init = sample[plusplus_rows(sample, model.n_clusters, seed, init)]
                model.set_params(init=init).fit(sample)


def _predict(model, Y: np.ndarray, lo: int, hi: int, out: np.ndarray) -> None:
    """``out[lo:hi]``: the nearest centres of the k-means ``model`` to Y's rows ``lo:hi``."""
    from sklearn import config_context  # loaded with the model it predicts for

    # the context is the calling thread's: each pool thread sets its own
    with config_context(assume_finite=True, skip_parameter_validation=True):
        out[lo:hi] = model.predict(Y[lo:hi])


def row_split_kind(k: int) -> type[KMeansSplit] | type[PivotSplit]:
    """How the rows of a block of ``k - 1`` iterates are split into k clusters:
    :class:`KMeansSplit`, or :class:`PivotSplit` beyond :data:`MANY_CENTRES`."""
    return KMeansSplit if k <= MANY_CENTRES else PivotSplit


def row_split(k: int, seed: int, n: int):
    """The split of :func:`row_split_kind` for k clusters of n rows."""
    return row_split_kind(k)(k, seed, n)


class PivotSplit:
    """The rows of a block split by the rows that column-pivoted QR picks.

    Where P is nearly uncoupled (Sec. 2.2) the block's span approaches that of
    the k clusters' indicator vectors: with the constant vector, each row of
    ``[1, Y]`` is nearly its cluster's row of an invertible k x k matrix.
    Pivoted QR of the rows (as the columns of ``[1, Y]^T``) picks k rows of
    largest residual, one in each cluster where the rows are near that form,
    and each row joins the pivot whose coefficient is largest when the row is
    written in the pivot rows (Damle, Minden & Ying, 2019).  Those coefficients,
    ``[1, Y] C^-1`` with C the pivot rows, do not depend on the block's basis.

    Unlike k-means with many centres, whose seedings leave a merged and a split
    cluster here and there and whose fresh fits move a few rows every step,
    the split is a deterministic function of the rows, so the clustering
    settles when the iterates do.  The pivots are chosen afresh at each step
    until the clustering moves no more than :data:`SETTLED` of the elements;
    from then on the same elements' rows are the pivots while that holds.  The
    block needs no orthonormal basis after the first step (:attr:`basis_free`),
    only one in which the pivot rows' condition has not grown far
    (:data:`MAX_GROWTH`).

    The pivots come from a sample of :data:`ROWS_PER_CENTRE` rows a cluster,
    made orthonormal over the sample, so that they too do not depend on the
    block's basis; the coefficients are summed in single precision (the rows
    need telling apart, not every bit).

    References
    ----------
    .. [1] A. Damle, V. Minden and L. Ying, Simple, direct and efficient
       multi-way spectral clustering, Information and Inference 8 (2019),
       181-203.
    """

    #: Rows of the sample a cluster: a cluster with none in it cannot be found.
    ROWS_PER_CENTRE = 20
    #: Rows a core assigns at a time (their k coefficients in memory).
    CHUNK = 8192
    #: How far the pivot rows' condition (1-norm) may grow past its value in an
    #: orthonormal block before the rows are read no more: single-precision
    #: coefficients lose about as many more units in the last place.
    MAX_GROWTH = 1e4
    #: The share of the elements a clustering may move from the last one and
    #: keep the pivots: the pivots' clusters no longer change, only a few rows
    #: between them.
    SETTLED = 1e-3

    @classmethod
    def sample_size(cls, k: int) -> int:
        """Rows of the sample the pivots of k clusters are chosen from."""
        return cls.ROWS_PER_CENTRE * int(k)

    def __init__(self, k: int, seed: int, n: int):
        self.k = k
        rng = np.random.default_rng(seed)
        size = self.sample_size(k)
        self.sample = np.sort(rng.choice(n, size, replace=False)) if n > size else np.arange(n)
        self.pivots: np.ndarray | None = None
        self.previous: np.ndarray | None = None
        #: Whether the last clustering moved at most :data:`SETTLED` of the
        #: elements from the one before: the pivots are kept.
        self.repeated = False
        #: Whether the next block may come in any basis (not the random start's
        #: first product, nor once the pivot rows' condition has grown).
        self.basis_free = False
        #: The pivot rows' condition in the last orthonormal block.
        self.condition = 1.0

    def _coefficients(self, Y: np.ndarray) -> np.ndarray | None:
        """``C^-1`` for the pivot rows C of ``[1, Y]``, or None where they are
        singular or their condition has grown past :data:`MAX_GROWTH`."""
        assert self.pivots is not None
        found = pivot_inverse(Y[self.pivots], Y.shape[0])
        if found is None:
            return None
        inverse, condition = found
        if not self.basis_free:  # an orthonormal block: the condition to grow from
            self.condition = condition
        growth = condition / self.condition
        if not np.isfinite(growth) or growth > self.MAX_GROWTH:
            return None
        # the block made orthonormal at the next step before the pivot rows
        # would be too ill conditioned to read (the block's columns draw together)
        self.basis_free = growth <= 0.1 * self.MAX_GROWTH
        return inverse

    def __call__(self, Y: np.ndarray) -> np.ndarray | None:
        Y = Y.reshape(Y.shape[0], -1)
        if self.pivots is None or not self.repeated:
            self.pivots = self.sample[pivot_positions(Y[self.sample], Y.shape[0], self.k)]
        inverse = self._coefficients(Y)
        if inverse is None:
            self.previous, self.repeated, self.basis_free = None, False, False
            return None
        weights, offset = pivot_weights(inverse, Y.shape[0])
        labels = np.empty(Y.shape[0], dtype=np.int64)
        threads.parallel(
            [
                partial(pivot_labels, Y[lo:hi], weights, offset, labels[lo:hi])
                for lo, hi in threads.spans(Y.shape[0])
            ]
        )
        if np.count_nonzero(np.bincount(labels, minlength=self.k)) < self.k:
            self.previous, self.repeated = None, False
            return None
        labels = canonical(labels)
        self.repeated = (
            self.previous is not None and moved(self.previous, labels) <= self.SETTLED * labels.size
        )
        self.previous = labels
        return labels


def pivot_positions(rows: np.ndarray, n: int, k: int) -> np.ndarray:
    """The positions among ``rows`` (sampled rows of a block of n rows) of the k
    rows pivoted QR picks first from ``[1, rows]``, made orthonormal over the
    sample (:mod:`sca.cholesky_qr`) so that the choice does not depend on the
    block's basis (:class:`PivotSplit`)."""
    augmented = np.empty((rows.shape[0], rows.shape[1] + 1))
    augmented[:, 0] = 1.0 / np.sqrt(n)
    augmented[:, 1:] = rows
    orthonormal(augmented)
    order = scipy.linalg.qr(
        np.asfortranarray(augmented.T, dtype=np.float32),
        mode="r",
        pivoting=True,
        overwrite_a=True,
        check_finite=False,
    )[1]
    return order[:k]


def pivot_inverse(pivot_rows: np.ndarray, n: int) -> tuple[np.ndarray, float] | None:
    """``C^-1`` for the pivot rows C of ``[1, Y]`` (``pivot_rows`` the k rows of
    the block Y of n rows) and C's condition in the 1-norm; None where C is
    singular."""
    k = pivot_rows.shape[0]
    C = np.empty((k, k))
    C[:, 0] = 1.0 / np.sqrt(n)
    C[:, 1:] = pivot_rows
    try:
        inverse = np.linalg.inv(C)
    except np.linalg.LinAlgError:
        return None
    return inverse, float(np.linalg.norm(C, 1) * np.linalg.norm(inverse, 1))


def pivot_weights(inverse: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The coefficients ``[1, Y] C^-1`` of a row y as ``y @ weights + offset``,
    in single precision (the rows need telling apart, not every bit)."""
    weights = np.ascontiguousarray(inverse[1:], dtype=np.float32)
    return weights, (inverse[0] / np.sqrt(n)).astype(np.float32)


def pivot_labels(Y, weights: np.ndarray, offset: np.ndarray, out=None) -> np.ndarray:
    """Each row of ``Y`` with the pivot of its largest coefficient
    (:func:`pivot_weights`), :attr:`PivotSplit.CHUNK` rows at a time; into
    ``out`` when given."""
    out = np.empty(Y.shape[0], dtype=np.int64) if out is None else out
    for start in range(0, Y.shape[0], PivotSplit.CHUNK):
        end = min(Y.shape[0], start + PivotSplit.CHUNK)
        coefficients = np.asarray(Y[start:end], dtype=np.float32) @ weights
        coefficients += offset
        out[start:end] = np.argmax(coefficients, axis=1)
    return out


def moved_in(table: np.ndarray) -> int:
    """The elements of the clustering of ``table``'s columns outside the row
    (the earlier clustering's cluster) that most of their cluster came from;
    ``table`` holds the joint counts of the two (rows: the earlier)."""
    return int(table.sum() - table.max(axis=0).sum())


def moved(before: np.ndarray, after: np.ndarray) -> int:
    """The elements ``after`` puts outside the cluster of ``before`` that most of
    their new cluster came from (0 for the same partition, whatever the names)."""
    rows, columns = int(before.max()) + 1, int(after.max()) + 1
    table = np.bincount(before.astype(np.int64) * columns + after, minlength=rows * columns)
    return moved_in(table.reshape(rows, columns))
