"""The iteration stage on a chunked label matrix, its n-sized data on the cluster.

:func:`iterate_chunked` is :func:`sca.clustering.iterate` with the k-means
split (Meyer & Wessell, Sec. 3; :mod:`sca.iteration`) for a
:class:`~sca.operators.chunked.ChunkedLabelOperator`.  The random starts,
the iterates and the labels are Dask arrays chunked like the label matrix;
the client holds only K-sized arrays and a sample:

* the iterates as K-vectors, ``Y = DH Z`` (:class:`sca.iteration._FactorSpace`,
  a step is ``G Z``), or, where the Gram matrix is not at hand, products
  (held on the workers) orthonormalised by Cholesky QR of their ``b x b``
  Gram matrices;
* the k-means centres (beyond :data:`~sca.options.MANY_CENTRES` clusters,
  the pivot rows of :class:`~sca.splits.PivotSplit`) fitted on a fixed
  sample of as many rows as in memory, whose rows of ``DH`` are gathered
  once, and every element assigned to its nearest centre (its pivot) in a
  map over the row blocks;
* whether a step's clustering is the previous one from the ``k x k`` table of
  their joint counts, summed over the blocks: the same partition when it
  has exactly k nonzero cells (every cluster non-empty).

The random starts are drawn per chunk (``dask.array.random``), so a start is
not the in-memory start of the same seed; the partition it settles on is the
same wherever the clusters are clear.
"""

from __future__ import annotations

import numpy as np

from .cholesky_qr import cholesky_qr
from .diagnostics import overlap_matching
from .errors import IterationError, SCAError
from .iteration import _MAX_REDRAWS, IterationResult, _FactorSpace
from .operators.chunked import ChunkedLabelOperator, tree_sum
from .splits import (
    KMeansSplit,
    PivotSplit,
    moved_in,
    pivot_inverse,
    pivot_labels,
    pivot_positions,
    pivot_weights,
    row_split_kind,
)


def _dask():
    """``dask`` and ``dask.array`` (an optional extra: imported on use)."""
    import dask
    import dask.array as da

    return dask, da


def random_starts(P: ChunkedLabelOperator, seed: int, count: int, eps: float):
    """``count`` random probability vectors, each at least ``eps`` from uniform
    (Sec. 4.2), drawn chunk by chunk and held on the workers."""
    _, da = _dask()
    for attempt in range(_MAX_REDRAWS):
        rng = da.random.default_rng([seed, attempt])
        X = rng.random((P.n, count), chunks=(P.rows, count))
        X = P.hold(X / X.sum(axis=0))
        if np.all(np.asarray(da.linalg.norm(X - 1.0 / P.n, axis=0)) >= eps):
            return X
    raise SCAError(f"no random start at least {eps:g} from uniform; lower eps", "options.eps")


def sample_rows(n: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` distinct indices below n, sorted, every such set equally likely:
    drawn with replacement and topped up, never an n-sized array (NumPy's
    ``choice`` without replacement permutes all n once the sample is over n/50)."""
    picked = np.unique(rng.integers(0, n, min(size, n)))
    while picked.size < min(size, n):
        more = rng.integers(0, n, min(size, n) - picked.size)
        picked = np.unique(np.concatenate([picked, more]))
    return picked


def _assign(Y: np.ndarray, model) -> np.ndarray:
    """Each row's nearest centre of the fitted k-means ``model``."""
    from sklearn import config_context

    with config_context(assume_finite=True, skip_parameter_validation=True):
        return model.predict(Y).astype(np.int32)


def _joint(labels: np.ndarray, previous: np.ndarray | None, k: int) -> np.ndarray:
    """The ``k x k`` joint counts of two clusterings of a block (the first
    row only, the clusters' sizes, without a previous one)."""
    codes = labels if previous is None else previous.astype(np.int64) * k + labels
    return np.bincount(codes, minlength=k * k).reshape(k, k)


def _first(labels: np.ndarray, offset: int, k: int) -> np.ndarray:
    """The first index of each cluster in a block starting at element ``offset``."""
    first = np.full(k, np.iinfo(np.int64).max)
    np.minimum.at(first, labels, np.arange(offset, offset + labels.size))
    return first


def blocks_sum(function, arrays, *args, op=np.add):
    """``function(*blocks, *args)`` for the row blocks of ``arrays`` (1-D, chunked
    alike), combined pairwise by ``op`` (:func:`sca.operators.chunked.tree_sum`)."""
    dask, _ = _dask()
    run = dask.delayed(function, pure=True)
    columns = [a.to_delayed().ravel() for a in arrays]
    return tree_sum([run(*blocks, *args) for blocks in zip(*columns)], op)


def canonical_chunked(labels, k: int):
    """Clusters numbered 0, 1, ... by first appearance (as
    :func:`sca.splits.canonical`), the first indices found per block."""
    offsets = np.concatenate([[0], np.cumsum(labels.chunks[0])[:-1]])
    _, da = _dask()
    starts = da.from_array(offsets, chunks=1)
    first = blocks_sum(
        lambda block, lo: _first(block, int(lo[0]), k), [labels, starts], op=np.minimum
    )
    rank = np.empty(k, dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(k)
    return labels.map_blocks(lambda block: rank[block], dtype=np.int64).persist()


class _Split:
    """One start's split (:func:`sca.splits.row_split_kind`): k-means centres
    fitted on the sample, or beyond :data:`~sca.options.MANY_CENTRES` clusters
    pivots chosen from it (:class:`~sca.splits.PivotSplit`, kept while a step
    moves at most its ``SETTLED`` share of the elements); every element
    assigned in a map over the row blocks."""

    def __init__(self, k: int, seed: int, n: int):
        self.k, self.n = k, n
        # k-means' sample: the rows given to each call
        self.kmeans = KMeansSplit(k, seed, 1) if row_split_kind(k) is KMeansSplit else None
        self.positions: np.ndarray | None = None
        self.repeated = False
        self.labels = None

    def _assign(self, Y, rows: np.ndarray):
        """The labels of this step as a Dask array (None where the pivot rows are singular)."""
        if self.kmeans is not None:
            model = self.kmeans.fit(rows)
            return Y.map_blocks(_assign, model, drop_axis=1, dtype=np.int32)
        if self.positions is None or not self.repeated:
            self.positions = pivot_positions(rows, self.n, self.k)
        found = pivot_inverse(rows[self.positions], self.n)
        if found is None:
            return None
        weights, offset = pivot_weights(found[0], self.n)
        return Y.map_blocks(pivot_labels, weights, offset, drop_axis=1, dtype=np.int64)

    def __call__(self, Y, sample_rows: np.ndarray) -> bool | None:
        """Cluster the rows of ``Y`` (Dask, ``n x b``): None when a cluster is
        empty, else whether the partition is the previous step's."""
        labels = self._assign(Y, sample_rows)
        if labels is None:
            self.labels, self.repeated = None, False
            return None
        labels = labels.persist()
        previous = self.labels
        if previous is None:
            table = blocks_sum(lambda a: _joint(a, None, self.k), [labels])
            sizes = table[0]
        else:
            table = blocks_sum(lambda a, b: _joint(a, b, self.k), [labels, previous])
            sizes = table.sum(axis=0)
        self.labels = labels
        if np.count_nonzero(sizes) < self.k:
            self.labels, self.repeated = None, False
            return None
        self.repeated = previous is not None and moved_in(table) <= PivotSplit.SETTLED * self.n
        return previous is not None and np.count_nonzero(table) == self.k


class _SampleRows:
    """The sampled rows of ``P.factor(Z)``: their codes and scale gathered once,
    each call a sum of r lookups into Z (``sample x r`` bytes on the client)."""

    def __init__(self, P: ChunkedLabelOperator, sample: np.ndarray):
        dask, _ = _dask()
        scale = np.ones(sample.size) if P.scale is None else P.scale[sample]
        codes, scale = dask.compute(P.codes[sample], scale)
        self.index = np.asarray(codes, dtype=np.int64) + P.groups[:-1]
        self.scale = np.asarray(scale, dtype=float)

    def __matmul__(self, Z: np.ndarray) -> np.ndarray:
        rows = np.zeros((self.index.shape[0], Z.shape[1]))
        for column in self.index.T:
            rows += Z[column]
        return self.scale[:, None] * rows


def _orthonormal_chunked(P: ChunkedLabelOperator, Z, block: int):
    """Deflated and orthonormalised blocks of the Dask ``Z`` (as
    :func:`sca.iteration._normalise`), and their norms after deflation."""
    _, da = _dask()
    Z = Z - Z.mean(axis=0)
    gram = np.asarray(Z.T @ Z)
    norms = np.sqrt(np.maximum(np.diag(gram), 0.0))
    parts = []
    for s in range(0, Z.shape[1], block):
        part = Z[:, s : s + block]
        G = gram[s : s + block, s : s + block]
        R = cholesky_qr(np.eye(G.shape[0]), G)  # R^-1 with (R^-1)^T G R^-1 = I
        parts.append(da.linalg.qr(part)[0] if R is None else part @ R)
    return P.hold(da.concatenate(parts, axis=1)), norms


def iterate_chunked(
    P: ChunkedLabelOperator,
    k: int,
    seed: int,
    starts: int,
    stable: int,
    max_iterations: int,
    block: int,
    eps: float,
) -> IterationResult:
    """:func:`sca.clustering.iterate` (``split="kmeans"``) on a chunked operator;
    the answer's labels are a Dask array (see the module docstring)."""
    _, da = _dask()
    if k == 1:
        labels = da.zeros(P.n, chunks=(P.rows,), dtype=np.int64)
        return IterationResult(labels, 0, [(labels, 1.0)])
    sample = sample_rows(P.n, row_split_kind(k).sample_size(k), np.random.default_rng(seed))
    splits = [_Split(k, seed + s, P.n) for s in range(starts)]
    Y = random_starts(P, seed, starts * block, eps)
    Y = P.hold(Y - Y.mean(axis=0))
    gram = P.factor_gram()
    space = None if gram is None else _FactorSpace(P, gram, block)
    near = None if space is None else _SampleRows(P, sample)
    count, done, active, t = [0] * starts, [None] * starts, list(range(starts)), 0
    # x_0's clustering never counts toward `stable` (Table 3.1): the splits start at x_1.
    while active and t < max_iterations:
        cols = np.concatenate([np.arange(s * block, (s + 1) * block) for s in active])
        if space is not None and space.step(Y, cols) is not None:
            Z = space.Z
            assert Z is not None and near is not None
            Y = P.factor(Z)  # read once, by the split's map: not held
            rows = near @ Z
        else:
            space = None
            Y, _ = _orthonormal_chunked(P, P.matmat(Y), block)
            rows = np.asarray(Y[sample])
        t += 1
        for s in list(active):
            part = slice(s * block, (s + 1) * block)
            same = splits[s](Y[:, part], rows[:, part])
            count[s] = 0 if same is None else (count[s] + 1 if same else 1)
            if count[s] >= stable:
                done[s] = splits[s].labels
                active.remove(s)
    found = [canonical_chunked(labels, k) for labels in done if labels is not None]
    if not found:
        raise IterationError.unsettled(stable, max_iterations)
    solutions = _solutions(found)
    answer = solutions[0][0]
    membership = _membership(found, answer, k) if starts > 1 else None
    return IterationResult(answer, t, solutions, membership, failed_starts=starts - len(found))


def _solutions(found: list) -> list:
    """Distinct partitions with their frequencies, most frequent first (as
    :func:`sca.iteration.solutions_of`; canonical labels: equal partitions are equal arrays)."""
    distinct: list[list] = []
    for labels in found:
        for same in distinct:
            if not bool((same[0] != labels).any().compute()):
                same[1] += 1
                break
        else:
            distinct.append([labels, 1])
    distinct.sort(key=lambda item: -item[1])
    return [(labels, count / len(found)) for labels, count in distinct]


def _membership(found: list, answer, k: int):
    """The fraction of starts placing each element in each cluster of ``answer``
    (as :func:`sca.iteration.fuzzy_membership`), as a Dask array."""
    mappings = []
    for labels in found:
        table = blocks_sum(lambda a, b: _joint(a, b, k), [answer, labels])  # labels x answer
        mappings.append(overlap_matching(table))

    def fractions(*blocks):
        out = np.zeros((blocks[0].size, k))
        for labels, mapped in zip(blocks, mappings):
            cluster = mapped[labels]
            ok = cluster >= 0
            out[np.flatnonzero(ok), cluster[ok]] += 1
        return out / len(blocks)

    return found[0].map_blocks(
        fractions, *found[1:], new_axis=1, chunks=(found[0].chunks[0], (k,)), dtype=float
    )
