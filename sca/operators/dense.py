"""S held as a dense ``n x n`` array (a user's similarity matrix)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .base import ConsensusOperator

#: Up to this order a dense null draw permutes the upper triangle exactly.
EXACT_SHUFFLE_MAX_N = 2000


class DenseOperator(ConsensusOperator):
    """S held as a dense array.

    Parameters
    ----------
    S : array_like of shape (n, n)
        The symmetric nonnegative similarity matrix.
    scale : ndarray of shape (n,), optional
        The diagonal of ``D``; None for S itself.
    """

    kind = "dense"

    def __init__(self, S: np.ndarray, scale=None):
        super().__init__(S.shape[0], scale)
        self.S = np.asarray(S, dtype=float)

    def _product(self, X):
        return self.S @ X

    def _raw_diagonal(self):
        return np.diag(self.S).copy()

    def _raw_entries(self, rows, cols):
        return self.S[rows, cols]

    def _pattern(self):
        return sp.csr_array(self.S != 0)

    def _with_scale(self, scale):
        return DenseOperator(self.S, scale)

    def null_draw(self, rng):
        """Off-diagonal entries shuffled symmetrically; the diagonal kept.

        Keeps the distribution of similarities, destroys which pairs hold them.

        Parameters
        ----------
        rng : numpy.random.Generator
            The source of the permutations.

        Returns
        -------
        DenseOperator
            The unscaled shuffled matrix.
        """
        return DenseOperator(shuffled_symmetric(self.S, rng))

    def _state(self):
        return {"S": self.S}

    @classmethod
    def from_state(cls, state):
        """The dense operator that :meth:`state` returned ``state`` for.

        Parameters
        ----------
        state : dict of str to ndarray
            The arrays of :meth:`state`: ``S`` and, when scaled, ``scale``.

        Returns
        -------
        DenseOperator
            The operator, scaled as it was.
        """
        return cls(state["S"], state.get("scale"))

    def to_dense(self):
        """Materialise ``D S D`` from the array S held.

        Returns
        -------
        ndarray of shape (n, n)
            The matrix ``D S D``.
        """
        s = np.ones(self.n) if self.scale is None else self.scale
        return s[:, None] * self.S * s[None, :]


def shuffled_symmetric(S: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Dense S with its off-diagonal entries placed at random, symmetric, diagonal kept.

    Up to :data:`EXACT_SHUFFLE_MAX_N` the upper-triangle entries are permuted
    exactly.  Beyond, rows and columns are relabelled by two independent
    permutations and the upper triangle of the result is mirrored, which
    moves every entry to a random pair in ``O(n^2)`` work.

    Parameters
    ----------
    S : ndarray of shape (n, n)
        A symmetric matrix.
    rng : numpy.random.Generator
        The source of the permutations.

    Returns
    -------
    ndarray of shape (n, n)
    """
    n = S.shape[0]
    if n <= EXACT_SHUFFLE_MAX_N:
        iu = np.triu_indices(n, 1)
        out = np.zeros_like(S)
        out[iu] = rng.permutation(S[iu])
    else:
        out = np.triu(S[rng.permutation(n)][:, rng.permutation(n)], 1)
    out += out.T
    out[np.diag_indices(n)] = np.diag(S)
    return out
