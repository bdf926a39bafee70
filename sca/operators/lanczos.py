"""Block Lanczos for the largest eigenvalues of ``G = (DH)^T (DH)`` (Meyer & Wessell, Sec. 3).

Sec. 3 computes only the k̂ largest eigenvalues of P when all of them cost
too much, and the ``"noise"`` rule of :mod:`sca.spectral` grows k̂ until the
spectrum reaches the floor.  For label runs of many labels G is too large to
form (K = r k), but a product with it is one pass over the labels, and one
pass serves a block of columns for a fraction of a pass each
(:func:`sca.operators.kernels.scatter_wide`).  So the eigenvalues come from a
block Krylov space ``span{V, G V, G^2 V, ...}`` rather than from ARPACK's
one vector per pass (where one extreme eigenvalue is all that is resolved,
a block of one column, which reaches it in the fewest passes):

* the basis is kept and fully reorthogonalised (block classical Gram-Schmidt,
  twice), so the Rayleigh quotient ``T = V^T G V`` is exact and each Ritz
  pair's residual is read off T's eigenvectors;
* a larger k̂ continues the same space instead of restarting it: the
  signal's eigenvalues, well apart from the bulk, converge first, and the
  space only grows as far as the eigenvalues asked for need.

A thick-restart Lanczos (ARPACK) restarts each k̂ from scratch, and its
basis of 2 k̂ + 1 vectors is refilled each restart; here the price is the
memory of the basis, bounded by :data:`BASIS_BYTES`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.linalg as la

from . import threads

#: Columns of each block (one pass over the labels serves them all).
BLOCK = 16
#: The basis is kept whole: at most this many bytes of it.
BASIS_BYTES = 768 << 20
#: The residual, relative to the largest eigenvalue, of a Ritz value below the floor.
ROUGH = 1e-4
#: The Ritz values are read again once the space has grown by this factor.
_CHECK_GROWTH = 1.2


def basis_vectors(size: int, block: int) -> int:
    """Vectors of order ``size`` the kept basis may hold: as many as
    :data:`BASIS_BYTES` allow, at least two blocks, at most ``size``."""
    return min(size, max(2 * block, BASIS_BYTES // (8 * size)))


def resolvable(size: int, block: int) -> int:
    """The most eigenvalues a kept space of blocks of ``block`` columns resolves:
    its basis less two blocks, for the last of them to converge."""
    return basis_vectors(size, block) - 2 * block


class BlockLanczos:
    """The largest eigenvalues of a symmetric positive semidefinite ``size x size``
    operator by block Lanczos; asking for more continues the same Krylov space.

    Parameters
    ----------
    apply : callable
        ``apply(Z)`` is ``G Z`` for ``Z`` of shape ``(size, b)``.
    size : int
        The order of G.
    start : ndarray of shape (size, b)
        The first block (b columns, linearly independent).
    max_dim : int, optional
        The largest basis; default as many vectors as :data:`BASIS_BYTES` hold.
    seed : int, default 0
        Seeds the columns drawn where a block loses rank.
    """

    def __init__(
        self,
        apply: Callable[[np.ndarray], np.ndarray],
        size: int,
        start: np.ndarray,
        max_dim: int | None = None,
        seed: int = 0,
    ):
        self.apply, self.size = apply, size
        self.block = start.shape[1]
        self.max_dim = basis_vectors(size, self.block) if max_dim is None else min(size, max_dim)
        self.rng = np.random.default_rng(seed)
        self.V = np.empty((size, min(self.max_dim, 8 * self.block)))
        self.T = np.zeros((self.V.shape[1], self.V.shape[1]))
        self.dim = 0
        self.next: np.ndarray | None = self._orthonormal(np.asarray(start, dtype=float))[0]
        self.coupling: np.ndarray | None = None  # B: G V = V T + next B E^T
        self._ritz: tuple | None = None
        #: Whether the last Ritz values returned (:meth:`ritz_pairs`) came from a
        #: basis at ``max_dim`` before they were resolved: each is then only a
        #: lower bound of the eigenvalue of its rank, which may lie above a floor
        #: the value is below.
        self.short = False

    # -- the space ----------------------------------------------------------
    def _grow(self, columns: int) -> None:
        if columns <= self.V.shape[1]:
            return
        width = min(self.max_dim, max(columns, 2 * self.V.shape[1]))
        V, T = np.empty((self.size, width)), np.zeros((width, width))
        V[:, : self.dim] = self.V[:, : self.dim]
        T[: self.dim, : self.dim] = self.T[: self.dim, : self.dim]
        self.V, self.T = V, T

    def _project_out(self, W: np.ndarray) -> np.ndarray:
        """W less its part in the basis, twice (classical Gram-Schmidt by blocks)."""
        V = self.V[:, : self.dim]
        for _ in range(2):
            W -= threads.matmul(V, threads.matmul(V.T, W))
        return W

    def _orthonormal(self, W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``W = Q R`` with Q orthonormal and orthogonal to the basis; where W loses
        rank, Q's spare columns are drawn at random (R's rows for them zero)."""
        Q, R, order = la.qr(W, mode="economic", pivoting=True)
        diag = np.abs(np.diag(R))  # descending: pivoting puts lost columns last
        R = R[:, np.argsort(order)]
        scale = max(float(diag[0]) if diag.size else 0.0, np.finfo(float).tiny)
        lost = np.flatnonzero(diag <= 1e-10 * scale)
        if lost.size:
            R[lost] = 0.0
            kept = np.ones(Q.shape[1], dtype=bool)
            kept[lost] = False  # QR's spare columns: orthonormal, but not to the basis
            for j in lost:
                fresh = self.rng.standard_normal(self.size)
                for _ in range(2):
                    fresh -= self.V[:, : self.dim] @ (self.V[:, : self.dim].T @ fresh)
                    fresh -= Q[:, kept] @ (Q[:, kept].T @ fresh)
                Q[:, j] = fresh / np.linalg.norm(fresh)
                kept[j] = True
        return Q, R

    def extend(self) -> bool:
        """One block more; False once the space is the whole of G's domain or the budget."""
        if self.next is None or self.dim + self.block > self.max_dim:
            return False
        Q, b = self.next, self.block
        self._grow(self.dim + b)
        lo = self.dim
        self.V[:, lo : lo + b] = Q
        self.dim += b
        W = self.apply(Q)
        # T's new columns exactly: V^T G Q (the older ones are rounding apart from zero)
        coefficients = threads.matmul(self.V[:, : self.dim].T, W)
        self.T[: self.dim, lo : lo + b] = coefficients
        self.T[lo : lo + b, : self.dim] = coefficients.T
        block = self.T[lo : lo + b, lo : lo + b]
        self.T[lo : lo + b, lo : lo + b] = (block + block.T) / 2
        if self.dim + b > self.size:
            self.next, self.coupling = None, None
        else:
            self.next, self.coupling = self._orthonormal(self._project_out(W))
        self._ritz = None
        return True

    # -- Ritz values ----------------------------------------------------------
    def ritz(self) -> tuple[np.ndarray, np.ndarray]:
        """Ritz values (descending) and their residual norms ``||G u - θ u||``."""
        if self._ritz is None:
            theta, S = np.linalg.eigh(self.T[: self.dim, : self.dim])
            theta, S = theta[::-1], S[:, ::-1]
            if self.coupling is None:
                residual = np.zeros(theta.size)
            else:
                residual = np.linalg.norm(self.coupling @ S[-self.block :], axis=0)
            self._ritz = (theta, residual)
        return self._ritz

    def eigenvalues(self, count: int, tol: float, floor: float | None = None) -> np.ndarray:
        """The ``count`` largest eigenvalues, each Ritz value's residual at most
        ``tol`` times the largest (or as far as the budget of the basis goes).

        Parameters
        ----------
        count : int
            How many eigenvalues.
        tol : float
            The residual allowed, relative to the largest eigenvalue (1 for P):
            an eigenvalue lies within that distance of each Ritz value returned.
        floor : float, optional
            A Ritz value that lies, with its residual, below this floor needs
            only the residual :data:`ROUGH` (times the largest): the rules ask
            of it only that it is below the floor, and the edge of the bulk,
            where many eigenvalues crowd, converges slowest.

        Returns
        -------
        ndarray of shape (count,)
            The largest Ritz values, descending.
        """
        return self.ritz_pairs(count, tol, floor)[0]

    def ritz_pairs(
        self, count: int, tol: float, floor: float | None = None, resolved: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`eigenvalues` with their residuals; only the largest ``resolved``
        (default all ``count``) need meet ``tol``.

        The others are the Ritz values of the same space, each a lower bound of
        the eigenvalue of its rank (Cauchy's interlacing), read from the space
        that resolved the largest: checked at the same sizes of the space as
        :meth:`eigenvalues` (the Krylov space itself does not depend on
        ``count``), so each is at most the one :meth:`eigenvalues` would return.

        Returns
        -------
        theta, residual : ndarray of shape (count,)
            The largest Ritz values, descending, and their residual norms.
        """
        count = min(count, self.size)
        resolved = count if resolved is None else min(resolved, count)

        def resolved_now() -> tuple[np.ndarray, np.ndarray, bool]:
            theta, residual = self.ritz()
            theta, residual = theta[:count], residual[:count]
            scale = max(theta[0], np.finfo(float).tiny)
            done = residual <= tol * scale
            if floor is not None:
                done |= (residual <= ROUGH * scale) & (theta + residual < floor)
            return theta, residual, bool(np.all(done[:resolved]))

        checked = 0
        while True:
            if self.dim >= count + self.block and self.dim >= _CHECK_GROWTH * checked:
                checked = self.dim
                theta, residual, done = resolved_now()
                if done:
                    self.short = False
                    return theta, residual
            if not self.extend():
                # A space of the whole domain is exact.  One at its budget falls
                # short where a value is not resolved as the loop asks: a Ritz
                # value is a lower bound of the eigenvalue of its rank, and a
                # residual does not bound that eigenvalue from above.
                theta, residual, done = resolved_now()
                self.short = self.next is not None and not done
                return theta, residual
