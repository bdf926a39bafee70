"""A new element bordering a clustered consensus: the extended scaling and operator.

A new element arrives with its consensus row ``s`` against the job's ``n``
elements and its self-similarity ``s_00`` (how each input kind gives them is
in :mod:`sca.newrows`).  The extended consensus is S bordered by one row and
column,

    S' = [[S, s], [s^T, s_00]],

and the job's scaling ``d`` (Sinkhorn-Knopp, Meyer & Wessell, Sec. 2.2-2.3)
is extended to it with the old scaling fixed (:func:`extend_scaling`): the
new element's factor ``δ`` makes its own row of ``P' = D' S' D'`` sum to one,

    δ (s·d + δ s_00) = 1,   δ = 2 / (a + sqrt(a^2 + 4 s_00)),  a = s·d,

(the positive root, written without cancellation).  Row i of the old
elements then sums to ``1 + p_i`` with ``p = δ d ∘ s`` the new column, so
the extended matrix is doubly stochastic up to ``max_i p_i``, which is
reported (:class:`Extension`).  ``P'`` is never formed:
:class:`BorderedOperator` is the old operator plus the rank-one border, on
which the custom clustering of Fig. 5.2 runs (:mod:`sca.placement`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import SCAError
from .operators import ConsensusOperator


@dataclass(frozen=True)
class Extension:
    """The new element's part of the extended balanced matrix ``P'``.

    Parameters
    ----------
    row : ndarray of shape (n,)
        ``P'`` between the new element and the old ones (``p = δ d ∘ s``).
    corner : float
        Its own entry of ``P'``, ``δ^2 s_00``.
    scale : float
        Its factor δ of the extended D.
    deviation : float
        ``max |row sum - 1|`` over every row of ``P'``.

    See Also
    --------
    extend_scaling : Computes it.
    """

    row: np.ndarray
    corner: float
    scale: float
    deviation: float


def extend_scaling(d, s, s00: float) -> Extension:
    """Extend the Sinkhorn scaling ``d`` of S to one more element (old ``d`` fixed).

    The new element's factor δ makes its own row of ``P' = D' S' D'`` sum to
    one: ``δ (s·d + δ s_00) = 1``, the positive root.

    Parameters
    ----------
    d : array, shape (n,)
        The job's scaling (``P = D S D``).
    s : array, shape (n,)
        The new element's similarities to the old elements (nonnegative).
    s00 : float
        Its similarity to itself (positive).

    Returns
    -------
    Extension
        The new element's row and corner of ``P'``, δ and how far ``P'`` is
        from doubly stochastic.

    Raises
    ------
    SCAError
        With ``field="elements"`` when the new element is similar to none of
        the elements, or its self-similarity is not positive.

    References
    ----------
    .. [1] C. D. Meyer and C. D. Wessell, Stochastic Data Clustering,
       Sec. 2.2-2.3 (the scaling extended).
    """
    d = np.asarray(d, dtype=float)
    s = np.asarray(s, dtype=float)
    a = float(s @ d)
    if not a > 0:  # no cluster to join: its row of P' would be all zero, its walk stuck
        raise SCAError("the new element is similar to none of the elements", "elements")
    if not s00 > 0:
        raise SCAError("the new element's similarity to itself must be positive", "elements")
    delta = 2.0 / (a + np.sqrt(a * a + 4.0 * s00))
    row = delta * d * s
    corner = delta * delta * s00
    own = abs(float(row.sum()) + corner - 1.0)  # rounding only: δ solves it exactly
    deviation = max(own, float(row.max()) if row.size else 0.0)
    return Extension(row, corner, float(delta), deviation)


class BorderedOperator(ConsensusOperator):
    """The operator ``P' = [[P, p], [p^T, c]]``: P bordered by one element, index ``n``.

    A product costs one product with P and two of length n; nothing of
    order ``n^2`` is formed.  Not stored (``state`` is refused).

    Parameters
    ----------
    P : ConsensusOperator
        The job's balanced operator.
    row : array_like of shape (n,)
        ``p``, the border: the new element's entries against the old ones
        (:attr:`Extension.row`).
    corner : float
        ``c``, the new element's own entry (:attr:`Extension.corner`).

    See Also
    --------
    extend_scaling : Gives ``row`` and ``corner``.
    """

    kind = "bordered"

    def __init__(self, P: ConsensusOperator, row, corner: float):
        super().__init__(P.n + 1)
        self.P = P
        self.row = np.asarray(row, dtype=float)
        self.corner = float(corner)

    def _product(self, X):
        head, last = X[:-1], X[-1]
        top = self.P.matmat(head) + (
            np.multiply.outer(self.row, last) if X.ndim > 1 else self.row * last
        )
        bottom = self.row @ head + self.corner * last
        return np.concatenate([top, bottom[None] if X.ndim > 1 else [bottom]])

    def _raw_diagonal(self):
        return np.append(self.P.diagonal(), self.corner)

    def _raw_entries(self, rows, cols):
        rows, cols = np.broadcast_arrays(np.asarray(rows), np.asarray(cols))
        n = self.P.n
        out = np.empty(rows.shape)
        old = (rows < n) & (cols < n)
        out[old] = self.P.entries(rows[old], cols[old])
        other = np.minimum(rows, cols)[~old]  # the old element of a border pair, or n
        out[~old] = np.where(other < n, self.row[np.minimum(other, n - 1)], self.corner)
        return out

    def _with_scale(self, scale):
        if scale is not None:
            raise NotImplementedError("a bordered operator is balanced already")
        return self

    def _state(self):
        raise NotImplementedError("a bordered operator is a query's, never stored")
