"""Sums and entries of a consensus operator: what the diagnostics and queries read of P.

:class:`BlockReads` is the part of :class:`~sca.operators.base.ConsensusOperator`
that reads P other than by a product with a vector: its sums between groups of
elements (the uncoupling measure, Definition 2.7), each element's sum within its
cluster (confidence), one element's row (the most similar elements) and single
entries.  Each form computes only ``B^T S B`` (``_sandwich``) and its raw entries.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

#: Entries of a dense n x step block formed at once by the generic B^T S B.
SANDWICH_ENTRIES = 8_000_000


class BlockReads:
    """Sums, rows and entries of ``D S D``, for
    :class:`~sca.operators.base.ConsensusOperator` (which provides ``n``,
    ``scale``, ``matmat`` and ``_product``)."""

    n: int
    scale: np.ndarray | None
    matmat: Callable[[np.ndarray], np.ndarray]
    _product: Callable[[np.ndarray], np.ndarray]

    def block_sums(self, labels: np.ndarray) -> np.ndarray:
        """The ``c x c`` matrix of ``e_a^T (D S D) e_b`` over groups ``a, b`` of ``labels``.

        The scaling is folded into the sparse indicator ``B = D E``, so each
        form only computes ``B^T S B`` (:meth:`_sandwich`), never S itself.

        Parameters
        ----------
        labels : array_like of int, shape (n,)
            Each element's group, ``0 .. c - 1``.

        Returns
        -------
        ndarray of shape (c, c)
            The sum of P's entries between each pair of groups.
        """
        labels = np.asarray(labels, dtype=np.int64)
        count = int(labels.max()) + 1
        weights = np.ones(self.n) if self.scale is None else self.scale
        B = sp.csr_array((weights, (np.arange(self.n), labels)), shape=(self.n, count))
        return self._sandwich(B)

    def within_sums(self, labels: np.ndarray) -> np.ndarray:
        """For each i, ``sum_j (D S D)_ij`` over the j with ``labels[j] == labels[i]``.

        For a doubly stochastic P this is the probability that one step of the
        walk from i stays in i's cluster.

        Parameters
        ----------
        labels : array_like of int, shape (n,)
            Each element's cluster, ``0 .. c - 1``.

        Returns
        -------
        ndarray of shape (n,)
            Each element's row sum of P within its own cluster.
        """
        labels = np.asarray(labels, dtype=np.int64)
        step = max(1, SANDWICH_ENTRIES // self.n)
        out = np.zeros(self.n)
        count = int(labels.max()) + 1
        for start in range(0, count, step):
            inside = (labels >= start) & (labels < start + step)
            E = np.zeros((self.n, min(step, count - start)))
            E[np.flatnonzero(inside), labels[inside] - start] = 1.0
            Y = self.matmat(E)
            out[inside] = Y[np.flatnonzero(inside), labels[inside] - start]
        return out

    def row_blocks(self, element: int):
        """Element ``element``'s row of ``D S D``, part by part.

        Here one part, the row from one product; a form on disk gives it a
        block of elements at a time.

        Parameters
        ----------
        element : int
            A 0-based element index.

        Yields
        ------
        start : int
            The part's first element.
        entries : ndarray
            The row's entries over the part's elements.
        """
        unit = np.zeros(self.n)
        unit[element] = 1.0
        yield 0, self.matmat(unit)

    def _sandwich(self, B: sp.csr_array) -> np.ndarray:
        """``B^T S B`` for a sparse ``n x c`` B, a few columns of products at a time."""
        c = B.shape[1]
        step = max(1, SANDWICH_ENTRIES // self.n)
        out = np.empty((c, c))
        for start in range(0, c, step):
            out[:, start : start + step] = B.T @ self._product(B[:, start : start + step].toarray())
        return out

    def entries(self, rows, cols) -> np.ndarray:
        """The entries ``(D S D)_ij`` for index arrays ``rows`` and ``cols``.

        Parameters
        ----------
        rows : array_like of int
            The row of each entry.
        cols : array_like of int
            The column of each entry, of the shape of ``rows``.

        Returns
        -------
        ndarray of float
            One entry per pair ``(rows[m], cols[m])``.
        """
        rows, cols = np.asarray(rows), np.asarray(cols)
        values = np.asarray(self._raw_entries(rows, cols), dtype=float)
        return values if self.scale is None else values * self.scale[rows] * self.scale[cols]

    def _raw_entries(self, rows, cols):
        raise NotImplementedError
