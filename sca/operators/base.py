"""The consensus operator's interface: what every stage may ask of S and of P = D S D.

Every stage (balancing, spectrum, iteration, custom clustering, diagnostics)
talks to S, and later to P = D S D, only through :class:`ConsensusOperator`.
Its forms live beside it in :mod:`sca.operators`:

* :class:`~sca.operators.dense.DenseOperator` -- an ``n x n`` array (a user's
  similarity matrix);
* :class:`~sca.operators.sparse.SparseOperator` -- a ``scipy.sparse`` matrix;
* :class:`~sca.operators.factored.FactoredOperator` -- ``S = H H^T`` with ``H``
  the sparse ``n x K`` 0/1 membership matrix of an ensemble (``K`` clusters
  over all runs), or the neighbourhood matrix of the shared-nearest-neighbour
  measure.  ``S`` is never formed: a product costs ``O(nnz H)``;
* :class:`~sca.operators.labels.LabelOperator` -- the same ``S = H H^T`` read
  off the ``n x r`` label matrix itself.

The diagonal scaling ``D`` of Sinkhorn-Knopp is kept apart from the matrix, so
``P = D S D`` costs no extra copy of ``S`` (Meyer & Wessell, Sec. 2.3).
Its eigenvalues are :mod:`sca.operators.eigen`'s, its sums, rows and entries
:mod:`sca.operators.reads`'s.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from .eigen import DENSE_SPECTRUM_MAX_N, Eigenvalues
from .reads import SANDWICH_ENTRIES, BlockReads

# Imported from here before the eigenvalues and the reads had modules of their own.
__all__ = ["DENSE_SPECTRUM_MAX_N", "SANDWICH_ENTRIES", "ConsensusOperator"]


class ConsensusOperator(Eigenvalues, BlockReads):
    """Symmetric nonnegative ``n x n`` operator ``D S D`` (``D = I`` unless scaled).

    Subclasses implement :meth:`_product` (``S @ X``), :meth:`_raw_diagonal`,
    :meth:`_raw_entries`, :meth:`_pattern`, :meth:`_state`, :meth:`_with_scale`,
    :meth:`null_draw` and :meth:`from_state`; everything else is shared.

    Parameters
    ----------
    n : int
        The order of S.
    scale : ndarray of shape (n,), optional
        The diagonal ``d`` of ``D`` (Sec. 2.3); None for S itself.

    Attributes
    ----------
    kind : str
        The form's name in :meth:`state` (``"dense"``, ``"sparse"``, ...).
    n : int
        The order of S.
    scale : ndarray of shape (n,) or None
        The diagonal of ``D``.
    """

    kind = "abstract"

    def __init__(self, n: int, scale: np.ndarray | None = None):
        self.n = int(n)
        self.scale = None if scale is None else np.asarray(scale, dtype=float)

    # -- what each form provides -------------------------------------------
    def _product(self, X: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _raw_diagonal(self) -> np.ndarray:
        raise NotImplementedError

    def _pattern(self) -> sp.sparray:
        """A sparse matrix whose graph has the connectivity of S."""
        raise NotImplementedError

    def _state(self) -> dict:
        raise NotImplementedError

    def _with_scale(self, scale):
        raise NotImplementedError

    def null_draw(self, rng: np.random.Generator) -> ConsensusOperator:
        """One draw of S's null model: same kind of entries, no cluster structure.

        :mod:`sca.null` balances the draw and reads its largest nontrivial
        eigenvalue (the noise floor of the ``"noise"`` rule for k).

        Parameters
        ----------
        rng : numpy.random.Generator
            The source of the draw's randomness.

        Returns
        -------
        ConsensusOperator
            An unscaled operator of the same form.

        See Also
        --------
        sca.spectrum : Reads the noise floor from such draws.
        """
        raise NotImplementedError

    # -- shared behaviour ---------------------------------------------------
    def matmat(self, X: np.ndarray, single: bool = False) -> np.ndarray:
        """The product ``(D S D) X``.

        P is symmetric, so this is also the row-vector product ``x^T P`` of the
        paper's evolution equation ``x_t^T = x_{t-1}^T P`` (Sec. 2.1, Eq. (2)).

        Parameters
        ----------
        X : array_like of shape (n,) or (n, s)
            The vector or the ``s`` columns to multiply.
        single : bool, default False
            Whether the product may be summed in single precision where the
            form's cost is the memory its passes move (the label form's block
            products over the labels: half the bytes a pass); the result is in
            double either way, and every other form computes in double.

        Returns
        -------
        ndarray of shape (n,) or (n, s)
            ``(D S D) X``, of the shape of ``X``.

        References
        ----------
        .. [1] C. D. Meyer and C. D. Wessell, Stochastic Data Clustering, Sec. 2.1.
        """
        X = np.asarray(X, dtype=float)
        if self.scale is None:
            return self._product(X)
        s = self.scale if X.ndim == 1 else self.scale[:, None]
        return s * self._product(s * X)

    def ones(self):
        """The vector of ones over the elements.

        Returns
        -------
        ndarray of shape (n,)
            Ones (a Dask array chunked like the rows for a chunked form).
        """
        return np.ones(self.n)

    def hold(self, X):
        """``X`` kept for reuse where the operator keeps its data.

        As it is for an in-memory form; computed and held on the workers for a
        chunked one (:mod:`sca.operators.chunked`), so its graph is not run again.

        Parameters
        ----------
        X : array_like
            A vector or block over the elements, as a product returned it.

        Returns
        -------
        array_like
            ``X``, held.
        """
        return X

    def extent(self, x) -> tuple[float, float]:
        """The least and the largest entry of a vector over the elements.

        Asked together: for a chunked operator (:mod:`sca.operators.chunked`)
        both come back from one trip to the workers, where each asked alone
        costs a trip of its own.

        Parameters
        ----------
        x : array_like of shape (n,)
            A vector over the elements, as a product returned it.

        Returns
        -------
        tuple of float
            ``(min(x), max(x))``.
        """
        return float(np.min(x)), float(np.max(x))

    def row_sums(self) -> np.ndarray:
        """The row sums ``(D S D) e``.

        Returns
        -------
        ndarray of shape (n,)
            Each row's sum; all ones for a doubly stochastic P (Sec. 2.2).
        """
        return self.matmat(self.ones())

    @property
    def rank_bound(self) -> int:
        """An upper bound on the rank of S (n; a factor's number of columns)."""
        return self.n

    def factor_gram(self) -> np.ndarray | None:
        """The ``K x K`` Gram matrix ``F^T F`` of a factor of P, when at hand.

        For ``P = F F^T`` with a factor F of K << n columns, the Gram matrix is
        returned when it is already at hand (computed for the spectrum).  The
        iteration then runs on K-vectors (:func:`sca.iteration.evolve`).

        Returns
        -------
        ndarray of shape (K, K) or None
            ``F^T F``, or None when this form has no such factor at hand.
        """
        return None

    def diagonal(self) -> np.ndarray:
        """The diagonal of ``D S D``.

        Returns
        -------
        ndarray of shape (n,)
            ``d_i^2 S_ii`` (``S_ii`` when unscaled).
        """
        diag = self._raw_diagonal()
        return diag if self.scale is None else diag * self.scale**2

    def scaled(self, d: np.ndarray) -> ConsensusOperator:
        """The operator ``D S D`` for ``D = diag(d)`` (composed with any scale).

        Parameters
        ----------
        d : array_like of shape (n,)
            The diagonal of D, as :func:`sca.balance` finds it (Sec. 2.3).

        Returns
        -------
        ConsensusOperator
            The same form over the same arrays, scaled by ``d`` on both sides.
        """
        d = np.asarray(d, dtype=float)
        return self._sharing(self._with_scale(d if self.scale is None else self.scale * d))

    def unscaled(self) -> ConsensusOperator:
        """S itself (``D = I``), sharing this operator's arrays.

        Returns
        -------
        ConsensusOperator
            The same form with no scale.
        """
        return self._sharing(self._with_scale(None))

    def _sharing(self, other: ConsensusOperator) -> ConsensusOperator:
        """``other``, a scaling of this S, with the components found for either
        (a positive scaling leaves the graph of S as it is)."""
        if other is not self:
            if self._found is None:
                self._found = {}
            other._found = self._found
        return other

    #: The components once found, shared by every scaling of the same S.
    _found: dict | None = None

    def components(self) -> tuple[int, np.ndarray]:
        """Connected components of the graph of S (``scipy.sparse.csgraph``).

        Found once for every scaling of the same S.  More than one component
        means S is uncoupled (Sec. 2.1).

        Returns
        -------
        count : int
            The number of components.
        labels : ndarray of int, shape (n,)
            Each element's component.
        """
        if self._found is None:
            self._found = {}
        if "components" not in self._found:
            self._found["components"] = self._components()
        return self._found["components"]

    def _components(self) -> tuple[int, np.ndarray]:
        """:meth:`components`, found (``scipy.sparse.csgraph`` on the pattern)."""
        count, labels = csgraph.connected_components(self._pattern(), directed=False)
        return int(count), labels[: self.n]

    def to_dense(self) -> np.ndarray:
        """Materialise ``D S D`` (for small n: display and tests only).

        Returns
        -------
        ndarray of shape (n, n)
            The matrix ``D S D``.
        """
        return self.matmat(np.eye(self.n))

    def state(self) -> dict[str, np.ndarray]:
        """Plain numeric arrays from which the operator is restored.

        :meth:`from_state` (through :func:`sca.operators.state.operator_from_state`)
        restores the operator from them.

        Returns
        -------
        dict of str to ndarray
            ``kind``, ``n``, ``scale`` when scaled, and the form's own arrays.
        """
        arrays = {"kind": np.array(self.kind), "n": np.array(self.n)}
        if self.scale is not None:
            arrays["scale"] = self.scale
        arrays.update(self._state())
        return arrays

    @classmethod
    def from_state(cls, state: dict) -> ConsensusOperator:
        """The operator of this form that :meth:`state` returned ``state`` for.

        Parameters
        ----------
        state : dict of str to ndarray
            The arrays of :meth:`state`; ``state["kind"]`` is this form's :attr:`kind`.

        Returns
        -------
        ConsensusOperator
            The operator of this form, scaled as it was.
        """
        raise NotImplementedError

    @property
    def nbytes(self) -> int:
        """The bytes of the arrays that hold the operator (those of :meth:`state`)."""
        return sum(a.nbytes for a in self.state().values())

    def __repr__(self):
        scaled = "" if self.scale is None else ", scaled"
        return f"{type(self).__name__}(n={self.n}{scaled})"
