"""A user's consensus or similarity matrix S (Meyer & Wessell, Sec. 2.2).

Checked (square, finite, nonnegative, symmetric within a relative tolerance,
a positive diagonal, a finite total) and wrapped as a dense or sparse operator.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..errors import SCAError
from ..operators import DenseOperator, SparseOperator

#: Relative tolerance for the symmetry check of a user's matrix.
SYMMETRY_RTOL = 1e-8
#: The largest sum of a consensus's entries: its total, and S + S^T when it is
#: symmetrised, must stay finite in float64 for balancing and σ.
MAX_CONSENSUS_SUM = np.finfo(float).max / 2
_BLOCK_ENTRIES = 4_000_000


def check_consensus(S, field: str = "consensus"):
    """Validate a consensus / similarity matrix without building anything from it.

    S must be square, finite, nonnegative, symmetric within a relative
    tolerance, with a positive diagonal (each element is similar to itself;
    Sec. 2.2 needs the positive diagonal for full indecomposability).
    Symmetry is checked in row blocks, so no n x n temporary is formed.

    Returns
    -------
    ndarray or scipy.sparse csr_array of float
    """
    if sp.issparse(S):
        S = sp.csr_array(S, dtype=float)
        values = S.data
    else:
        try:
            S = np.asarray(S, dtype=float)
        except (TypeError, ValueError) as exc:
            raise SCAError(f"{field} must be a numeric matrix: {exc}", field) from None
        values = S
    if S.ndim != 2 or S.shape[0] != S.shape[1]:
        raise SCAError(f"{field} must be square, got shape {S.shape}", field)
    n = S.shape[0]
    if n < 2:
        raise SCAError(f"{field} must have at least 2 elements, got {n}", field)
    if not np.all(np.isfinite(values)):
        raise SCAError(f"{field} has NaN or infinite entries", field)
    if values.size and values.min() < 0:
        raise SCAError(f"{field} has negative entries (min {values.min():g})", field)
    with np.errstate(over="ignore"):  # nonnegative terms: no partial sum exceeds the total
        total = float(values.sum())
    if total > MAX_CONSENSUS_SUM:
        raise SCAError(
            f"{field} is too large for float64: its entries sum to {total:g} (at "
            f"most {MAX_CONSENSUS_SUM:.3g}); divide it by a constant, which does "
            f"not change the clustering",
            field,
        )
    scale = float(values.max()) if values.size else 0.0
    worst = _asymmetry(S)
    if worst > SYMMETRY_RTOL * max(scale, 1.0):
        raise SCAError(f"{field} is not symmetric (max |S - S^T| = {worst:g})", field)
    diag = S.diagonal()
    if np.any(diag <= 0):
        bad = int(np.flatnonzero(diag <= 0)[0])
        raise SCAError(f"{field} needs a positive diagonal; entry {bad} is {diag[bad]:g}", field)
    return S


def _asymmetry(S) -> float:
    """``max |S - S^T|``, in row blocks for a dense S."""
    if sp.issparse(S):
        diff = abs(S - S.T)
        return float(diff.max()) if diff.nnz else 0.0
    step = max(1, _BLOCK_ENTRIES // S.shape[0])
    return max(
        float(np.max(np.abs(S[i : i + step] - S[:, i : i + step].T)))
        for i in range(0, S.shape[0], step)
    )


def consensus_operator(S, field: str = "consensus"):
    """Validate a consensus / similarity matrix and wrap it as an operator.

    The checks are :func:`check_consensus`'s: S must be square, finite,
    nonnegative, symmetric within a relative tolerance, with a positive
    diagonal (Sec. 2.2).  The operator holds S exactly symmetrised,
    ``(S + S^T) / 2``.

    Parameters
    ----------
    S : array_like or sparse matrix of shape (n, n)
        The consensus or similarity matrix (dense or ``scipy.sparse``).
    field : str, default "consensus"
        The name the errors give the input.

    Returns
    -------
    DenseOperator or SparseOperator
        A :class:`DenseOperator` for a dense S, a :class:`SparseOperator`
        for a sparse one.

    Raises
    ------
    SCAError
        With ``field`` set to the given ``field`` when S fails a check.

    See Also
    --------
    membership_operator : The consensus of label runs, never formed.
    snn_operator : The shared-nearest-neighbour consensus of raw data.
    """
    S = check_consensus(S, field)
    if sp.issparse(S):
        return SparseOperator((S + S.T) / 2)
    return DenseOperator((S + S.T) / 2)
