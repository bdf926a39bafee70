"""The eigenvalues of a consensus operator: what the spectral stage asks of P.

:class:`Eigenvalues` is the part of :class:`~sca.operators.base.ConsensusOperator`
that answers for P's largest eigenvalues (Sec. 3's k̂): densely for a small
operator, else by ``eigsh`` on its products; a form with a cheaper way (a
factor's Gram matrix, a kept Krylov space) overrides it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import eigsh

#: Below this order a spectrum is computed densely with ``eigvalsh``.
DENSE_SPECTRUM_MAX_N = 1000


class Eigenvalues:
    """P's largest eigenvalues, for :class:`~sca.operators.base.ConsensusOperator`
    (which provides ``n``, ``matmat`` and ``to_dense``)."""

    n: int
    matmat: Callable[[np.ndarray], np.ndarray]
    to_dense: Callable[[], np.ndarray]

    def _all_eigenvalues(self) -> np.ndarray:
        """Every eigenvalue of ``D S D`` (small forms only)."""
        return np.linalg.eigvalsh(self.to_dense())

    @property
    def full_spectrum_cheap(self) -> bool:
        """Whether every eigenvalue costs no more than a few products (small or low-rank forms)."""
        return self.n <= DENSE_SPECTRUM_MAX_N

    def eigenvalues(
        self, k_hat: int | None = None, few: bool = False, floor: float | None = None
    ) -> np.ndarray:
        """The ``k_hat`` largest eigenvalues of ``D S D``, descending (all if None).

        Small operators are solved densely; large ones with ``eigsh`` using
        ``which="LA"`` (a general similarity matrix need not be semidefinite,
        so "largest magnitude" could pick negative eigenvalues) and a modest
        tolerance (machine precision spends most work on the bulk near zero).

        Parameters
        ----------
        k_hat : int, optional
            How many eigenvalues (at most n); None for all of them (Sec. 3's k̂).
        few : bool, default False
            A rough figure will do (a null draw's edge): the iterative solver
            then stops at a relative tolerance of 1e-4.
        floor : float, optional
            The noise floor: eigenvalues below it are wanted only to tell them
            below it, so a solver that can may resolve them more roughly.

        Returns
        -------
        ndarray of shape (k_hat,)
            The largest eigenvalues, descending.
        """
        k_hat = self.n if k_hat is None else min(int(k_hat), self.n)
        if self.n <= DENSE_SPECTRUM_MAX_N or k_hat >= self.n - 1:
            values = self._all_eigenvalues()
        else:
            values = self._top_eigenvalues(k_hat, 1e-4 if few else 1e-10, few, floor)
        return np.sort(values)[::-1][:k_hat]

    def eigenvalue_bounds(self, k_hat: int) -> tuple[np.ndarray, np.ndarray]:
        """Bounds of the ``k_hat`` largest eigenvalues, as cheaply as the solver allows.

        For where a rough figure will do (a null draw's edge).  Here both are
        :meth:`eigenvalues` with ``few``: a form with a kept Krylov space
        resolves only the largest two, and bounds the rest.

        Parameters
        ----------
        k_hat : int
            How many eigenvalues (at most n).

        Returns
        -------
        lower : ndarray of shape (k_hat,)
            Lower bounds of P's largest eigenvalues, descending.
        upper : ndarray of shape (k_hat,)
            Upper bounds: each eigenvalue lies between its two bounds.
        """
        values = self.eigenvalues(k_hat, few=True)
        return values, values.copy()

    @property
    def eigenvalue_budget(self) -> int:
        """The most eigenvalues a kept Krylov space of this form resolves.

        Within its memory budget; 0 where the form keeps none (``eigsh``'s own
        budget then applies, :func:`sca.components.affordable`).

        Returns
        -------
        int
            How many eigenvalues.
        """
        return 0

    @property
    def eigenvalues_short(self) -> bool:
        """Whether a kept Krylov space at its budget left the last eigenvalues unresolved.

        Such values are only lower bounds of the eigenvalues of their rank: an
        eigenvalue read below a floor may lie above it.

        Returns
        -------
        bool
            False where the form keeps no Krylov space.
        """
        return False

    def release_spectrum_work(self) -> None:
        """Drop what the spectrum kept to grow k̂ (a Krylov space's basis).

        Called once k is chosen: nothing after the spectral stage reads it.
        """

    def known_above(self, floor: float) -> int:
        """How many eigenvalues of P are known to exceed ``floor``, from work done.

        0 unless a Krylov space is kept: its Ritz values are lower bounds of
        P's eigenvalues, one by one.

        Parameters
        ----------
        floor : float
            The threshold.

        Returns
        -------
        int
            A lower bound on the number of eigenvalues above ``floor``.
        """
        return 0

    def _top_eigenvalues(
        self, k_hat: int, tol: float = 1e-10, few: bool = False, floor: float | None = None
    ) -> np.ndarray:
        """``k_hat`` largest eigenvalues by ``eigsh`` to ``tol`` (``few`` and ``floor``
        are for forms whose solver can use them)."""
        linop = sp.linalg.LinearOperator(
            (self.n, self.n), matvec=self.matmat, matmat=self.matmat, dtype=float
        )
        v0 = np.full(self.n, 1.0 / np.sqrt(self.n))
        return eigsh(linop, k=k_hat, which="LA", tol=tol, v0=v0, return_eigenvectors=False)
