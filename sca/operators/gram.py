"""The spectrum of a factored operator from its Gram matrix (Meyer & Wessell, Sec. 3).

For ``P = (DH)(DH)^T`` with an ``n x K`` factor H, the nonzero eigenvalues of P
are those of the ``K x K`` Gram matrix ``G = (DH)^T (DH)``.
:class:`GramSpectrum` is the part of
:class:`~sca.operators.factored.FactorOperator` that computes them: G formed
in row blocks and solved densely while K is small, else G applied without
being formed, by block Lanczos on K-vectors (:mod:`sca.operators.lanczos`),
its Krylov space kept as k̂ grows.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

from . import threads
from .eigen import DENSE_SPECTRUM_MAX_N, Eigenvalues
from .lanczos import BLOCK, BlockLanczos, resolvable

#: Largest K for which the K x K Gram matrix of a factored operator is formed.
GRAM_MAX_K = 2048
_GRAM_BLOCK_ROWS = 4096
#: Up to this many times GRAM_MAX_K clusters, all of G's eigenvalues (a dense solve)
#: once Lanczos's basis, 2 k̂ + 1 vectors, would be a sixteenth of K or more: its
#: restarts then cost more than the dense solve (K = 2,200, k̂ = 322: 9 CPU-s of
#: ARPACK against 1 for eigvalsh) ...
DENSE_GRAM_TIMES = 2
DENSE_GRAM_SHARE = 16
#: ... where forming G costs no more than this many multiply-adds.
DENSE_GRAM_MAX_WORK = 1 << 36
#: Block Lanczos stops once each Ritz value's residual is this fraction of λ1 = 1: the
#: rules read eigenvalues against a floor and each other, not to the last digit ...
LANCZOS_TOL = 1e-6
#: ... and a null draw's edge more roughly, still well inside the floor's margin.
FEW_TOL = 1e-5
#: Columns a block of the Krylov space where G is applied through its factor, each
#: block a pass over H (cheaper a column the wider it is, up to the kernels' width):
#: for P's largest eigenvalues, a cluster of as many as there are clusters ...
APPLIED_BLOCK = 12
#: ... and one for a null draw's edge, where only the largest is resolved: one
#: vector's Krylov space reaches an extreme eigenvalue in the fewest products,
#: each a pass over the packed codes.
APPLIED_FEW_BLOCK = 1


def _krylov_start(perron: np.ndarray, width: int) -> np.ndarray:
    """A Krylov space's first block: ``perron`` (the eigenvector of λ1, or its
    image under the factor) and ``width - 1`` fixed random columns."""
    start = np.random.default_rng(0x5CA).standard_normal((perron.size, width))
    start[:, 0] = perron
    return start


class GramSpectrum(Eigenvalues):
    """P's eigenvalues from the Gram matrix of its factor, for
    :class:`~sca.operators.factored.FactorOperator` (which provides ``H``,
    ``scale``, ``factor`` and ``factor_transpose``)."""

    H: sp.csr_array
    scale: np.ndarray | None
    factor: Callable[[np.ndarray], np.ndarray]
    factor_transpose: Callable[[np.ndarray], np.ndarray]
    #: G = (DH)^T (DH), kept once the spectrum has computed it.
    _gram: np.ndarray | None = None

    #: All of G's eigenvalues, descending, once a dense solve has computed them.
    _gram_values: np.ndarray | None = None

    #: The Krylov space of G, continued as k̂ grows (:mod:`sca.operators.lanczos`).
    _lanczos: BlockLanczos | None = None

    #: The Krylov space of P itself where G is no smaller (K >= n - 1).
    _p_lanczos: BlockLanczos | None = None

    @property
    def n_clusters(self) -> int:
        """K, the number of columns of H (clusters over all runs)."""
        return self.H.shape[1]

    @property
    def full_spectrum_cheap(self):
        """Whether every eigenvalue is cheap: K small enough for the Gram matrix, or n small."""
        return self.n_clusters <= GRAM_MAX_K or self.n <= DENSE_SPECTRUM_MAX_N

    def gram(self, dtype=np.float64) -> np.ndarray:
        """The ``K x K`` matrix ``(DH)^T (DH)``, accumulated in row blocks.

        Parameters
        ----------
        dtype : numpy dtype, default numpy.float64
            The precision of the sum: float32 halves the work where a rough
            spectrum will do.

        Returns
        -------
        ndarray of shape (K, K)
            The Gram matrix, whose nonzero eigenvalues are those of P.
        """
        K = self.n_clusters
        G = np.zeros((K, K), dtype=dtype)
        for start in range(0, self.n, _GRAM_BLOCK_ROWS):
            block = self.H[start : start + _GRAM_BLOCK_ROWS].toarray().astype(dtype, copy=False)
            if self.scale is not None:
                block *= self.scale[start : start + _GRAM_BLOCK_ROWS, None]
            G += block.T @ block
        return G

    @property
    def rank_bound(self) -> int:
        """An upper bound on the rank of S: ``min(n, K)``."""
        return min(self.n, self.n_clusters)

    @property
    def gram_cheap(self) -> bool:
        """Whether the ``K x K`` Gram matrix is cheap enough to form for the spectrum."""
        return self.n_clusters <= GRAM_MAX_K

    def eigenvalues(self, k_hat=None, few=False, floor=None):
        """The ``k_hat`` largest eigenvalues of ``D S D``, descending, from the Gram matrix.

        The nonzero eigenvalues of ``P = (DH)(DH)^T`` are those of the ``K x K``
        Gram matrix; P has rank at most K, so the rest are zero.  When K is
        larger than n, or too large for the Gram matrix, they come as for any
        operator (:meth:`ConsensusOperator.eigenvalues`).

        Parameters
        ----------
        k_hat : int, optional
            How many eigenvalues (at most n); None for all of them.
        few : bool, default False
            A rough figure will do (a null draw's edge): the Gram matrix is
            formed in float32 and the iterative solver stops sooner
            (:data:`FEW_TOL`).
        floor : float, optional
            Eigenvalues below this noise floor are resolved only roughly
            (:meth:`sca.operators.lanczos.BlockLanczos.eigenvalues`).

        Returns
        -------
        ndarray of shape (k_hat,)
            The largest eigenvalues, descending.
        """
        # the Gram matrix pays only while K < n; raw data's ensembles at sqrt(n) levels have
        # K > n, and a few eigenvalues are then cheaper by Lanczos than P formed densely
        if self.n_clusters > self.n and k_hat is not None and int(k_hat) < self.n - 1:
            values = self._top_eigenvalues(int(k_hat), 1e-4 if few else 1e-10, few, floor)
            return np.sort(values)[::-1][: int(k_hat)]
        dense = not few and self._dense_gram_pays(k_hat)
        if (
            not self.gram_cheap
            and not dense
            and self.n_clusters < self.n - 1
            and k_hat is not None
            and int(k_hat) < self.n_clusters - 1
        ):
            values = self._top_gram_eigenvalues(int(k_hat), few, floor)
            return np.sort(values)[::-1][: int(k_hat)]
        if (not self.gram_cheap and not dense) or self.n_clusters > self.n:
            return super().eigenvalues(k_hat, few, floor)
        K = self.n_clusters
        k_hat = self.n if k_hat is None else min(int(k_hat), self.n)
        if dense and self._gram_values is not None:
            values = self._gram_values
            return np.concatenate([values, np.zeros(max(0, k_hat - values.size))])[:k_hat]
        gram = None if few else self._gram  # k̂ grows on the same G
        if gram is None:
            gram = self.gram(np.float32 if few else np.float64)
        if not few:
            self._gram = gram  # also for the iteration (factor_gram)
        if k_hat < K - 1 and K > DENSE_SPECTRUM_MAX_N and (few or K > GRAM_MAX_K) and not dense:
            values = self._lanczos_of(
                lambda Z: np.asarray(threads.matmul(gram, Z.astype(gram.dtype)), dtype=float)
            ).eigenvalues(k_hat, FEW_TOL if few else LANCZOS_TOL, floor)
        else:
            # in float64 even for a float32 G: LAPACK's ssyevd is slower here than dsyevd
            values = np.linalg.eigvalsh(gram.astype(np.float64, copy=False))
        values = np.sort(values)[::-1]
        if dense:
            self._gram_values = values  # k̂ grows on the same spectrum
        # P has rank at most K: the remaining n - K eigenvalues are zero.
        values = np.concatenate([values, np.zeros(max(0, k_hat - values.size))])
        return values[:k_hat]

    def _top_eigenvalues(self, k_hat: int, tol: float = 1e-10, few=False, floor=None):
        """P's ``k_hat`` largest eigenvalues where neither G nor its Krylov space
        answers (K >= n - 1, mostly: G no smaller than P): block Lanczos on P
        itself, its Krylov space kept as k̂ grows (one pass over the labels a
        block of :data:`APPLIED_BLOCK` columns), as on G where G is the smaller;
        ARPACK (``eigsh``, restarted for each k̂) for a rough figure (``few``:
        the null's and the references' edge, read as the references were) and
        where the basis would outgrow :data:`~sca.operators.lanczos.BASIS_BYTES`."""
        lanczos = None if few else self._p_lanczos_of(k_hat)
        if lanczos is None:
            return super()._top_eigenvalues(k_hat, tol, few, floor)
        return lanczos.eigenvalues(k_hat, LANCZOS_TOL, floor)

    def _p_lanczos_of(self, k_hat: int) -> BlockLanczos | None:
        """The kept Krylov space of P (made on first use, its first column the
        Perron vector ``1 / sqrt(n)``), or None where ``k_hat`` eigenvalues would
        outgrow its basis."""
        if self._p_lanczos is None:
            start = _krylov_start(np.full(self.n, 1.0 / np.sqrt(self.n)), APPLIED_BLOCK)
            self._p_lanczos = BlockLanczos(self.matmat, self.n, start)
        return self._p_lanczos if k_hat <= resolvable(self.n, APPLIED_BLOCK) else None

    def _dense_gram_pays(self, k_hat) -> bool:
        """Whether all of G's eigenvalues cost less than Lanczos's ``k_hat``
        (:data:`DENSE_GRAM_TIMES`): K small, G cheap to form, k̂ a sizeable share of K."""
        K = self.n_clusters
        return (
            k_hat is not None
            and K <= DENSE_GRAM_TIMES * GRAM_MAX_K
            and K < self.n
            and (2 * int(k_hat) + 1) * DENSE_GRAM_SHARE >= K
            and (self.gram_cheap or self.n * K * K <= DENSE_GRAM_MAX_WORK)
        )

    def _top_gram_eigenvalues(self, k_hat: int, few: bool, floor=None) -> np.ndarray:
        """The largest eigenvalues of P as those of ``G = (DH)^T (DH)`` applied, not
        formed: block Lanczos (:mod:`sca.operators.lanczos`) keeps K-vectors, not
        n-vectors, applies G to a block of them per pass over H, and continues
        the same Krylov space when k̂ grows."""
        block = APPLIED_FEW_BLOCK if few else APPLIED_BLOCK
        return self._lanczos_of(self.gram_product, block).eigenvalues(
            k_hat, FEW_TOL if few else LANCZOS_TOL, floor
        )

    def eigenvalue_bounds(self, k_hat: int) -> tuple[np.ndarray, np.ndarray]:
        """Bounds of the ``k_hat`` largest eigenvalues, as cheaply as the solver allows.

        Where G is applied by block Lanczos, only the two largest Ritz values
        are resolved (to :data:`FEW_TOL`): each lies within its residual of
        its eigenvalue, and every other eigenvalue lies between its Ritz value
        (Cauchy's interlacing) and the second's bound.  The crowded edge of a
        null's bulk, which converges slowest, is then bounded rather than computed.

        Parameters
        ----------
        k_hat : int
            How many eigenvalues.

        Returns
        -------
        lower : ndarray of shape (k_hat,)
            Lower bounds of P's largest eigenvalues, descending.
        upper : ndarray of shape (k_hat,)
            Upper bounds: each eigenvalue lies between its two bounds.
        """
        K = self.n_clusters
        if self.gram_cheap or K >= self.n - 1 or int(k_hat) >= K - 1:
            return super().eigenvalue_bounds(k_hat)
        lanczos = self._lanczos_of(self.gram_product, APPLIED_FEW_BLOCK)
        theta, residual = lanczos.ritz_pairs(int(k_hat), FEW_TOL, resolved=2)
        upper = theta + residual
        upper[2:] = upper[min(1, upper.size - 1)]
        return theta, upper

    @property
    def eigenvalue_budget(self) -> int:
        """The most eigenvalues within :data:`~sca.operators.lanczos.BASIS_BYTES`.

        All K where G is cheap to form and solve, else what the kept Krylov
        space of G (K < n - 1) or of P holds, less two blocks for the last to
        converge.

        Returns
        -------
        int
            How many eigenvalues.
        """
        K, n = self.n_clusters, self.n
        if self.gram_cheap and K < n:
            return K
        return max(2, resolvable(n if K >= n - 1 else K, APPLIED_BLOCK))

    @property
    def eigenvalues_short(self) -> bool:
        """Whether the kept Krylov space of G or of P came back short at its budget."""
        return any(s is not None and s.short for s in (self._lanczos, self._p_lanczos))

    def release_spectrum_work(self) -> None:
        """Drop the kept Krylov spaces of G and of P.

        The basis of P's holds up to :data:`~sca.operators.lanczos.BASIS_BYTES`;
        G itself stays for the iteration (``factor_gram``).
        """
        self._lanczos = self._p_lanczos = None

    def known_above(self, floor: float) -> int:
        """Ritz values of the kept Krylov space above ``floor``.

        By Cauchy's interlacing each is a lower bound of the eigenvalue of its rank.

        Parameters
        ----------
        floor : float
            The threshold.

        Returns
        -------
        int
            A lower bound on the number of eigenvalues above ``floor``.
        """
        spaces = [s for s in (self._lanczos, self._p_lanczos) if s is not None and s.dim > 0]
        return max((int(np.sum(s.ritz()[0] > floor)) for s in spaces), default=0)

    @property
    def krylov_block(self) -> int:
        """Columns per block of the Krylov space (:data:`~sca.operators.lanczos.BLOCK`).

        One pass over H serves them all.
        """
        return BLOCK

    #: Columns a block of G's Krylov space holds at least: 1 where a pass over H
    #: costs little beside its columns' work (the fewest products then win).
    pass_columns = 1

    def _lanczos_of(self, apply, block: int | None = None) -> BlockLanczos:
        """The Krylov space of G under ``apply``, made on first use (blocks of
        ``block`` columns, at most :attr:`krylov_block` and at least
        :attr:`pass_columns`) and kept."""
        if self._lanczos is None:
            width = self.krylov_block if block is None else min(block, self.krylov_block)
            width = max(width, self.pass_columns)
            perron = self.factor_transpose(np.ones(self.n))  # the Perron vector's image
            self._lanczos = BlockLanczos(apply, self.n_clusters, _krylov_start(perron, width))
        return self._lanczos

    def gram_product(self, Z: np.ndarray) -> np.ndarray:
        """``G Z = (DH)^T (DH) Z`` without G.

        Parameters
        ----------
        Z : ndarray of shape (K, s)
            Columns over the clusters of H.

        Returns
        -------
        ndarray of shape (K, s)
            ``G Z``.
        """
        return self.factor_transpose(self.factor(Z))
