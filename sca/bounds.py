"""The noise rule's count of eigenvalues by bounds, where a Krylov space cannot hold them.

With many clusters (k = 1,000 at n = 10^5) the noise rule needs P's
eigenvalues down past the k-th, and a Krylov space that resolves a thousand
clustered eigenvalues holds more vectors than memory allows
(:mod:`sca.operators.lanczos`).  The rule needs only how many eigenvalues
exceed their floors, and the Courant-Fischer theorem bounds that count from
any trial subspace with orthonormal basis Q of m columns:

* the j-th largest eigenvalue of the compression ``Q^T P Q`` is at most
  λ_j, so where all m exceed their floors, at least m eigenvalues do;
* λ_(m+1) is at most the largest eigenvalue of P on the complement of Q,
  ``(I - QQ^T) P (I - QQ^T)``, so where that lies below its floor, at most m do.

Where both hold the count is exactly m: the noise rule's k, with no
eigenvalue past the bounds computed.  The trial subspace is spanned by the
indicators of groups of elements, the blocks of a nearly uncoupled P
(Sec. 2.2), whose constant vectors are its dominant eigenvectors where the
coupling is weak: the connected components of the pairs of elements that
share more clusters of H than any pair would under the null (each run's
labels permuted over the elements, :mod:`sca.null`), that is at least
:func:`least_shared` of them.  Counting the pairs costs ``sum_a n_a^2`` over
H's clusters a; beyond :data:`MAX_PAIR_WORK` it is not tried.

:func:`sca.spectral.spectrum` tries the bounds before any eigenvalue where
the runs have more than :data:`MANY_LABELS` labels, and otherwise where the
eigensolver's memory budget, not the spectrum, ended the list of
eigenvalues.  Where the groups do not give both bounds nothing changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import cast

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, eigsh
from scipy.stats import poisson

from .null import NoiseFloor
from .operators import ConsensusOperator, FactorOperator, kernels

#: Pairs of elements counted at most (``sum_a n_a^2`` over H's clusters).
MAX_PAIR_WORK = 4e9
#: The expected number of pairs, among all n(n-1)/2, that share the least
#: count of clusters under the null.
NULL_PAIRS = 0.01
#: Runs with more labels than this (the median run) may make more eigenvalues
#: above the floor than a Krylov space resolves cheaply: the bounds are tried first.
MANY_LABELS = 256
#: The largest eigenvalue of P on the complement, to this relative tolerance.
TOL = 1e-4


@dataclass(frozen=True)
class CountedBounds:
    """The count ``m`` of P's eigenvalues above their floors, with the bounds that
    settle it: ``lower`` (descending: the compression's eigenvalues, lower
    bounds of λ_1 ... λ_m), ``upper`` (an upper bound of λ_(m+1)), and ``least``
    (the clusters of H a pair shares for the groups to join it)."""

    count: int
    lower: np.ndarray
    upper: float
    least: int

    @property
    def values(self) -> np.ndarray:
        """``lower`` and ``upper``: bounds of λ_1 ... λ_(m+1), each on its side of its floor."""
        return np.r_[self.lower, self.upper]

    @property
    def note(self) -> str:
        return (
            f"k counted by bounds, not computed eigenvalues: P compressed onto "
            f"{self.count} groups of elements that share at least {self.least} "
            f"clusters (more than any pair does with each run's labels permuted) "
            f"has {self.count} eigenvalues above the noise floor (the least "
            f"{self.lower[-1]:.4g}), which bound λ_1 ... λ_{self.count} from below, "
            f"and P on the rest has none (its largest {self.upper:.4g} bounds "
            f"λ_{self.count + 1} from above)"
        )


def _tried(P: ConsensusOperator) -> bool:
    """Whether P is a form the bounds are tried on: label runs' clusters in memory."""
    return (
        isinstance(P, FactorOperator) and P.groups is not None and not getattr(P, "chunked", False)
    )


def cluster_sizes(P: FactorOperator) -> np.ndarray:
    """The size of each of H's clusters, ``H^T 1``, by a pass over the labels (H,
    n r entries, is not formed for it)."""
    S = cast(FactorOperator, P.unscaled())
    return np.asarray(S.factor_transpose(np.ones(P.n)), dtype=np.float64).ravel()


def pair_work(P: ConsensusOperator) -> float:
    """Pairs of elements the groups count: ``sum_a n_a^2`` over H's clusters
    (infinite for forms without runs' clusters)."""
    if not _tried(P):
        return float("inf")
    sizes = cluster_sizes(cast(FactorOperator, P))
    return float(sizes @ sizes)


def least_shared(P: FactorOperator) -> int:
    """The least number of shared clusters that fewer than :data:`NULL_PAIRS` of
    all pairs reach under the null: runs permuted independently share a
    cluster with probability ``sum_a n_a (n_a - 1) / (n (n - 1))`` each, whose
    sum over the runs is the mean of a (nearly) Poisson count."""
    n = P.n
    sizes = cluster_sizes(P)
    mean = float(sizes @ (sizes - 1)) / (n * (n - 1.0))
    pairs = n * (n - 1) / 2
    least = 2
    while pairs * poisson.sf(least - 1, mean) > NULL_PAIRS:
        least += 1
    return least


def groups_of(P: FactorOperator, least: int, by_cluster=None) -> np.ndarray:
    """Each element's group (``0 ... m-1``) among the components of the pairs
    sharing at least ``least`` clusters, or ``-1`` for an element alone
    (``by_cluster``: ``H^T`` in CSR form, when the caller holds it)."""
    roots = kernels.strong_pair_roots(P.H, least, by_cluster)
    _, labels, sizes = np.unique(roots, return_inverse=True, return_counts=True)
    labels = labels.ravel()
    kept = sizes[labels] > 1
    out = np.full(P.n, -1, dtype=np.int64)
    out[kept] = np.unique(labels[kept], return_inverse=True)[1].ravel()
    return out


class TrialGroups:
    """The groups of P's elements and the bounds they give, computed once and read
    against any floors (a rough null's, then the exact one's).

    Parameters
    ----------
    P : ConsensusOperator
        The balanced operator of label runs (``P = F F^T``, ``F = D H``).
    most : int, optional
        The largest count to settle (the spectrum's ``max_k_hat``): a count
        beyond it is left open.
    """

    def __init__(self, P: ConsensusOperator, most: int | None = None):
        self.P, self.most = P, most
        self._lower: np.ndarray | None = None
        self._upper: float | None = None
        self.least = 0
        self.Q = None

    @cached_property
    def affordable(self) -> bool:
        """Whether the pairs cost at most :data:`MAX_PAIR_WORK` (read only where
        the bounds would be tried: it takes a pass over the labels)."""
        return pair_work(self.P) <= MAX_PAIR_WORK

    @property
    def many_labels(self) -> bool:
        """Whether the runs have more than :data:`MANY_LABELS` labels (the median),
        at an affordable cost: then the count is tried by bounds before any
        eigenvalue is computed."""
        if not _tried(self.P):
            return False
        groups = np.asarray(cast(FactorOperator, self.P).groups, dtype=float)
        return float(np.median(np.diff(groups))) > MANY_LABELS and self.affordable

    @property
    def lower(self) -> np.ndarray:
        """The eigenvalues of ``Q^T P Q``, descending: lower bounds of λ_1 ... λ_m
        (empty where fewer than two groups form)."""
        if self._lower is None:
            P = cast(FactorOperator, self.P)
            by_cluster = P.H_by_cluster
            self.least = least_shared(P)
            groups = groups_of(P, self.least, by_cluster)
            inside = np.flatnonzero(groups >= 0)
            m = int(groups.max()) + 1
            if m < 2:
                self._lower = np.empty(0)
                return self._lower
            sizes = np.bincount(groups[inside], minlength=m)
            self.Q = sp.csr_array(
                (1.0 / np.sqrt(sizes[groups[inside]]), (inside, groups[inside])),
                shape=(P.n, m),
            )
            scale = np.ones(P.n) if P.scale is None else np.asarray(P.scale, dtype=float)
            M = by_cluster @ (sp.diags_array(scale) @ self.Q)  # F^T Q: K x m
            self._lower = np.sort(np.linalg.eigvalsh((M.T @ M).toarray()))[::-1]
        return self._lower

    @property
    def upper(self) -> float:
        """The largest eigenvalue of P on the complement of the groups (``eigsh``
        to :data:`TOL`, as the spectrum's other eigenvalues): λ_(m+1) is at most it."""
        if self._upper is None:
            P, Q = self.P, self.Q
            assert Q is not None

            def complement(X):
                X = np.asarray(X, dtype=float).reshape(P.n, -1)
                X = X - Q @ (Q.T @ X)
                Y = P.matmat(X)
                return Y - Q @ (Q.T @ Y)

            rest = LinearOperator((P.n, P.n), matvec=complement, matmat=complement, dtype=float)
            v0 = np.random.default_rng(0).standard_normal(P.n)
            top = eigsh(rest, k=1, which="LA", tol=TOL, v0=v0, return_eigenvectors=False)
            self._upper = float(top[0])
        return self._upper

    def count(self, null: NoiseFloor) -> CountedBounds | None:
        """The number of P's eigenvalues above the floors of ``null``, settled by
        the bounds of this module's description, or None where they leave it open
        (or the pairs would cost more than :data:`MAX_PAIR_WORK`, or the count
        is past ``most``).

        References
        ----------
        .. [1] C. D. Meyer and C. D. Wessell, Stochastic Data Clustering, Sec. 2.2
           (nearly uncoupled P) and Sec. 3 (k̂, the eigenvalues the rule reads).
        """
        if not self.affordable:
            return None
        lower = self.lower
        m = lower.size

        def settled(values) -> bool:
            return null.signal(values) == m and null.settles(values)

        if m < 2 or (self.most is not None and m > self.most):
            return None
        if not settled(np.r_[lower, -np.inf]) or not settled(np.r_[lower, self.upper]):
            return None
        return CountedBounds(m, lower, self.upper, self.least)
