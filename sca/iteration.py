"""The iteration stage (Meyer & Wessell, Sec. 3, Fig. 3.1, and Sec. 4.2).

From a random probability vector ``x_0`` the algorithm tracks
``x_t^T = x_{t-1}^T P`` and, after each product, splits the sorted entries
at the ``k-1`` largest gaps; it stops when the clustering has been the same
for ``stable`` consecutive steps, counted from x_1 (``split="gaps"``: the
paper's algorithm, Fig. 3.1).

Two things make this usable in floating point:

* ``x_t - u`` (u uniform) shrinks like ``λ2^t`` and reaches rounding noise
  after a few hundred steps; a clustering read from there is noise.  We
  iterate the *deflated* vector ``y_t = x_t - mean(x_t)``, rescaled each step.
  Because P is doubly stochastic, ``x_t = mean(x_0) + c_t y_t`` with
  ``c_t > 0``: an increasing affine map, so sorting and the largest gaps (and
  therefore every clustering) are those of ``x_t``, without the floor.
* A cut at a gap of (near) zero is no clustering and does not count toward
  ``stable``.

With ``split="kmeans"`` (the default) each start is a block of ``b = k-1``
vectors iterated together (the column space of ``X_0 P^t``, deflated and
re-orthonormalised each step so the columns stay independent), and the rows
of the ``n x b`` block are clustered with k-means; beyond
:data:`~sca.options.MANY_CENTRES` clusters by the rows pivoted QR picks
(:class:`~sca.splits.PivotSplit`), which read the block in any basis, so
that after the first step it is only deflated and scaled.  This is block power
iteration on P with k-means on the rows: run to convergence it is spectral
clustering with the doubly stochastic normalisation (Zass & Shashua, NIPS
2006); stopped at the first stable clustering it is power iteration
clustering (Lin & Cohen, ICML 2010) on the balanced P.  It is not the paper's
"alternative" of Fig. 3.1, which means one-dimensional k-means on one x_t.
We default to it because one gap split of a single vector merges blocks
when k is large.
"""

from __future__ import annotations

import copy
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import cast

import numpy as np

from .cholesky_qr import cholesky_qr, orthonormal
from .diagnostics import matching
from .errors import SCAError
from .operators import ConsensusOperator, FactorOperator, threads
from .options import SPLITS, check  # noqa: F401 - SPLITS re-exported
from .splits import GAP_EPS, KMeansSplit, canonical, gap_split, row_split  # noqa: F401 - re-exported

#: Redraws allowed for a random start within ε of uniform.
_MAX_REDRAWS = 100
#: A product of the iterates larger than this is taken a slice of columns at a
#: time, into their memory, ...
PRODUCT_BYTES = 1 << 27
#: ... of at least this many columns.
PRODUCT_MIN_COLUMNS = 64


@dataclass
class IterationResult:
    """Outcome of :func:`iterate`.

    Parameters
    ----------
    labels : ndarray of int, shape (n,)
        The most frequent solution over the starts.
    iterations : int
        The steps ``x_t^T = x_{t-1}^T P`` taken, until the last start settled.
    solutions : list of (ndarray, float)
        Every distinct solution as ``(labels, frequency)``, most frequent first.
    membership : ndarray of shape (n, k), optional
        With starts > 1: the fraction of starts placing each element in each
        cluster of the answer, after matching clusters.
    trace : list of dict, optional
        On request, the first start step by step: ``t``, ``x`` (x_t; None for
        block starts) and ``labels`` (the paper's Table 3.1).
    failed_starts : int, default 0
        The starts not stable within the iteration cap (dropped).
    rounds : int, default 1
        The rounds of re-consensus, the first clustering included.
    history : list of list, default []
        With re-consensus: each round's ``solutions``.

    See Also
    --------
    iterate : Computes it.
    """

    labels: np.ndarray
    iterations: int
    solutions: list
    membership: np.ndarray | None = None
    trace: list | None = None
    failed_starts: int = 0
    rounds: int = 1
    history: list = field(default_factory=list)


def random_start(n: int, rng: np.random.Generator, eps: float) -> np.ndarray:
    """A random probability vector at least ``eps`` (2-norm) from uniform (Sec. 4.2)."""
    for _ in range(_MAX_REDRAWS):
        x = rng.random(n)
        x /= x.sum()
        if np.linalg.norm(x - 1.0 / n) >= eps:
            return x
    raise SCAError(f"no random start at least {eps:g} from uniform; lower eps", "options.eps")


def _normalise(Z: np.ndarray, b: int, orthonormalise: bool = True) -> np.ndarray:
    """Deflate each column of Z (remove the uniform direction) and orthonormalise
    each block of b columns (or, without ``orthonormalise``, scale each column to
    unit length), in place; returns the norms after deflation."""
    Z -= Z.mean(axis=0)
    if b == 1 or not orthonormalise:
        norms = np.linalg.norm(Z, axis=0) if b == 1 else np.sqrt(np.einsum("ij,ij->j", Z, Z))
        Z /= np.where(norms > 0, norms, 1.0)
        return norms
    return np.concatenate([orthonormal(Z[:, s : s + b]) for s in range(0, Z.shape[1], b)])


def check_iteration_options(P, k, starts, stable, max_iterations, split):
    n = P.n
    if not (isinstance(k, (int, np.integer)) and 1 <= k <= n):
        raise SCAError(f"k must be an integer in [1, n] = [1, {n}], got {k!r}", "options.k")
    for name, value in (
        ("starts", starts),
        ("stable", stable),
        ("max_iterations", max_iterations),
        ("split", split),
    ):
        check(name, value)


def evolve(
    P: ConsensusOperator,
    k: int,
    X0: np.ndarray,
    block: int,
    split: str,
    stable: int,
    max_iterations: int,
    seed: int = 0,
    trace: bool = False,
    stop=None,
    deadline: float | None = None,
    overwrite_x0: bool = False,
):
    """Iterate the starts in ``X0`` (``n x starts*block``) until each is stable.

    ``stop(labels, t)`` may end a start early (custom clustering); it returns
    True when ``labels`` at step ``t`` is an answer.  Returns
    ``(per-start labels or None, steps taken, trace, Y)``; a start that never
    settled within ``max_iterations`` gets ``None``.  ``Y`` holds each start's
    deflated, normalised iterate at the step where it stopped.  The
    evolution also stops at the first step that ends at or past ``deadline``
    (a :func:`time.monotonic` instant): fewer than ``max_iterations`` steps
    and unsettled starts tell the caller so.  With ``overwrite_x0`` the
    iterates are kept in X0's memory (a block of a thousand columns is most
    of a job's).
    """
    n_starts = X0.shape[1] // block
    mean = X0.mean(axis=0)
    Y = X0 if overwrite_x0 else X0.copy()
    Y -= mean
    scale = np.ones(X0.shape[1])
    splitters = (
        [(lambda y: gap_split(y.ravel(), k))] * n_starts
        if split == "gaps"
        else [row_split(k, seed + s, X0.shape[0]) for s in range(n_starts)]
    )
    previous: list[np.ndarray | None] = [None] * n_starts
    count = [0] * n_starts
    done: list = [None] * n_starts
    active = list(range(n_starts))
    steps = []
    t = 0
    gram = P.factor_gram()
    space = None if gram is None else _FactorSpace(cast(FactorOperator, P), gram, block)
    while True:
        # x_0 is the random start, not a step of the evolution: its clustering
        # never counts toward `stable` (the paper counts from x_1, Table 3.1)
        # and is read only for a trace or a stop rule, by a copy of the split,
        # so that x_1's k-means starts afresh either way (sca.chunked_iteration
        # reads none either)
        read = t > 0 or trace or stop is not None
        for s in list(active) if read else ():
            split_s = splitters[s] if t > 0 else copy.deepcopy(splitters[s])
            labels = split_s(Y[:, s * block : (s + 1) * block])
            last = previous[s]
            same = labels is not None and last is not None and np.array_equal(labels, last)
            count[s] = 0 if labels is None or t == 0 else (count[s] + 1 if same else 1)
            previous[s] = labels
            if trace and s == 0:
                x = (mean[0] + scale[0] * Y[:, 0]) if block == 1 else None
                steps.append(
                    {
                        "t": t,
                        "x": None if x is None else x.copy(),
                        "labels": None if labels is None else labels.copy(),
                    }
                )
            finished = (
                stop(labels, t) if stop is not None else labels is not None and count[s] >= stable
            )
            if finished:
                done[s] = labels
                active.remove(s)
        if (
            not active
            or t >= max_iterations
            or (deadline is not None and time.monotonic() >= deadline)
        ):
            return done, t, (steps if trace else None), Y
        # x_t^T = x_{t-1}^T P on the deflated iterate, then renormalise.
        cols = np.concatenate([np.arange(s * block, (s + 1) * block) for s in active])
        if space is not None and (norms := space.step(Y, cols, trace)) is not None:
            Y[:, cols] = space.expand(cols)
        else:  # on n-vectors (and from here on, should the K-vectors lose rank)
            space = None
            whole = cols.size == Y.shape[1]
            # Where k-means reads the rows the product may be summed in single
            # precision: each step re-orthonormalises the block in double, so the
            # rounding of one step's sums enters once and does not accumulate over
            # the steps, far below the distances k-means tells apart.  The gap
            # split compares gaps with GAP_EPS and keeps double.
            # a split that reads the rows whatever the basis (sca.splits.PivotSplit
            # after its first step) spares the n b^2 orthonormalisation
            basis = not all(getattr(splitters[s], "basis_free", False) for s in active)
            if whole:
                Y = _product(P, Y, single=split == "kmeans")
                norms = _normalise(Y, block, basis)
            else:
                Z = P.matmat(Y[:, cols], single=split == "kmeans")
                norms = _normalise(Z, block, basis)
                Y[:, cols] = Z
        scale[cols] *= norms
        t += 1


def _product(P: ConsensusOperator, Y: np.ndarray, single: bool) -> np.ndarray:
    """``P Y``: into Y's own memory, a slice of columns at a time, where Y is
    larger than :data:`PRODUCT_BYTES` (each column's product needs only that
    column, and a second block as large as Y would double the iteration's
    memory); a new array otherwise.  A slice holds at least
    :data:`PRODUCT_MIN_COLUMNS` columns: the products pass over the labels once
    for each few dozen columns, so narrower slices would cost more passes."""
    step = max(PRODUCT_MIN_COLUMNS, PRODUCT_BYTES // (Y.shape[0] * Y.itemsize))
    if step >= Y.shape[1]:
        return P.matmat(Y, single=single)
    for s in range(0, Y.shape[1], step):
        Y[:, s : s + step] = P.matmat(Y[:, s : s + step], single=single)
    return Y


class _FactorSpace:
    """The iterates of a factored ``P = F F^T`` (F = DH, K columns) held as
    K-vectors: after the first step every iterate is ``Y = F Z``, so
    ``P Y = F (G Z)`` with ``G = F^T F``, the uniform direction is ``1 = F w``
    with ``w = F^T 1`` (P is doubly stochastic), and ``Y^T Y = Z^T G Z``.  A
    step is a ``K x K`` product; only ``F Z``, for the split, passes over the
    elements.
    """

    def __init__(self, P: FactorOperator, G: np.ndarray, block: int):
        self.P, self.G, self.block = P, G, block
        self.w = P.factor_transpose(P.ones())
        self.Z: np.ndarray | None = None

    def step(self, Y: np.ndarray, cols: np.ndarray, measure: bool = True) -> np.ndarray | None:
        """One product for the columns ``cols`` of the iterate ``Y``, deflated
        and normalised; returns the norms after deflation (ones unless
        ``measure``: only a trace reads them, and they cost a product with G),
        or None where a block's columns are (nearly) dependent."""
        if self.Z is None:  # the random start is no F Z: its product is F (F^T x_0)
            self.Z = np.zeros((self.G.shape[0], Y.shape[1]))
            Z = self.P.factor_transpose(Y[:, cols])
        else:
            Z = threads.matmul(self.G, self.Z[:, cols])
        Z -= np.outer(self.w, self.w @ Z) / self.P.n
        norms = np.ones(Z.shape[1])
        if measure:
            norms = np.sqrt(np.maximum(np.einsum("ij,ij->j", Z, threads.matmul(self.G, Z)), 0.0))
        for s in range(0, Z.shape[1], self.block):
            part = cholesky_qr(Z[:, s : s + self.block], self.G)
            if part is None:
                return None
            Z[:, s : s + self.block] = part
        self.Z[:, cols] = Z
        return norms

    def expand(self, cols: np.ndarray) -> np.ndarray:
        assert self.Z is not None  # set by the first step
        return self.P.factor(self.Z[:, cols])


def solutions_of(runs: list[np.ndarray]):
    """Distinct clusterings with their frequencies, most frequent first."""
    counter = Counter(tuple(labels.tolist()) for labels in runs)
    ordered = sorted(counter.items(), key=lambda item: -item[1])
    total = len(runs)
    return [(np.array(labels), freq / total) for labels, freq in ordered]


def fuzzy_membership(runs: list[np.ndarray], reference: np.ndarray) -> np.ndarray:
    """Fraction of starts placing each element in each cluster of ``reference``.

    Each start's clusters are matched to the reference's by the one-to-one
    assignment of largest overlap (``linear_sum_assignment``).
    """
    n, k = reference.size, int(reference.max()) + 1
    membership = np.zeros((n, k))
    for labels in runs:
        mapped = matching(labels, reference)[labels]
        ok = mapped >= 0
        membership[np.flatnonzero(ok), mapped[ok]] += 1
    return membership / len(runs)
