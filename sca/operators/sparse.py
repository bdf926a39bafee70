"""S held as a ``scipy.sparse`` CSR matrix."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .base import ConsensusOperator


class SparseOperator(ConsensusOperator):
    """S held as a ``scipy.sparse`` CSR matrix.

    Parameters
    ----------
    S : sparse array or matrix of shape (n, n)
        The symmetric nonnegative similarity matrix.
    scale : ndarray of shape (n,), optional
        The diagonal of ``D``; None for S itself.
    """

    kind = "sparse"

    def __init__(self, S, scale=None):
        super().__init__(S.shape[0], scale)
        self.S = sp.csr_array(S, dtype=float)

    def _product(self, X):
        return self.S @ X

    def _raw_diagonal(self):
        return self.S.diagonal()

    def _raw_entries(self, rows, cols):
        return np.asarray(self.S[rows, cols]).ravel()

    def _sandwich(self, B):
        return np.asarray((B.T @ self.S @ B).toarray())

    def within_sums(self, labels):
        """For each i, ``sum_j (D S D)_ij`` over the j in i's cluster.

        Read off S's stored entries: O(nnz), whatever the number of clusters.

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
        S = sp.coo_array(self.S)
        same = labels[S.row] == labels[S.col]
        rows, cols, values = S.row[same], S.col[same], S.data[same]
        if self.scale is not None:
            values = values * self.scale[rows] * self.scale[cols]
        return np.bincount(rows, weights=values, minlength=self.n)

    def _pattern(self):
        return self.S

    def _with_scale(self, scale):
        return SparseOperator(self.S, scale)

    def null_draw(self, rng):
        """Off-diagonal entries shuffled symmetrically; the diagonal kept.

        Rows and columns are relabelled independently and the upper triangle is
        mirrored.

        Parameters
        ----------
        rng : numpy.random.Generator
            The source of the permutations.

        Returns
        -------
        SparseOperator
            The unscaled shuffled matrix.
        """
        return SparseOperator(shuffled_symmetric(self.S, rng))

    def _state(self):
        return {"data": self.S.data, "indices": self.S.indices, "indptr": self.S.indptr}

    @classmethod
    def from_state(cls, state):
        """The sparse operator that :meth:`state` returned ``state`` for.

        Parameters
        ----------
        state : dict of str to ndarray
            The arrays of :meth:`state`: ``n``, the CSR ``data``, ``indices`` and
            ``indptr``, and, when scaled, ``scale``.

        Returns
        -------
        SparseOperator
            The operator, scaled as it was.
        """
        n = int(state["n"])
        S = sp.csr_array((state["data"], state["indices"], state["indptr"]), shape=(n, n))
        return cls(S, state.get("scale"))


def shuffled_symmetric(S, rng: np.random.Generator) -> sp.csr_array:
    """Sparse S with its off-diagonal entries placed at random, symmetric, diagonal kept.

    Rows and columns are relabelled by two independent permutations and the
    upper triangle of the result is mirrored, which moves every entry to a
    random pair in ``O(nnz)`` work.

    Parameters
    ----------
    S : sparse array of shape (n, n)
        A symmetric matrix.
    rng : numpy.random.Generator
        The source of the permutations.

    Returns
    -------
    scipy.sparse.csr_array of shape (n, n)
    """
    n = S.shape[0]
    diagonal = S.diagonal()
    off = sp.csr_array(S - sp.diags_array(diagonal))
    off.eliminate_zeros()
    M = off[rng.permutation(n)][:, rng.permutation(n)]
    upper = sp.triu(M, k=1, format="csr")
    return sp.csr_array(upper + upper.T + sp.diags_array(diagonal))
