"""Inputs that reach the consensus operator (Meyer & Wessell, Sec. 1 and 4.3).

* a precomputed consensus or similarity matrix S, dense or sparse;
* ensemble label runs, giving the factored form S = H H^T;
* raw data plus an ensemble spec (:mod:`sca.ensemble` runs k-means / NMF);
* raw data and the shared-nearest-neighbour measure ("Using a single measure").

Validation happens here, once, at the boundary; the stages assume it.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.neighbors import NearestNeighbors

from .errors import SCAError
from .operators import DenseOperator, FactoredOperator, SparseOperator

#: Relative tolerance for the symmetry check of a user's matrix.
SYMMETRY_RTOL = 1e-8


def check_data(X, field: str = "data") -> np.ndarray:
    """Raw data: a finite 2-D array, rows = elements (at least two)."""
    try:
        X = np.asarray(X, dtype=float)
    except (TypeError, ValueError) as exc:
        raise SCAError(f"{field} must be a numeric matrix: {exc}", field) from None
    if X.ndim != 2:
        raise SCAError(f"{field} must be 2-D (rows = elements), got shape {X.shape}", field)
    if X.shape[0] < 2 or X.shape[1] < 1:
        raise SCAError(f"{field} needs at least 2 rows and 1 column, got shape {X.shape}", field)
    if not np.all(np.isfinite(X)):
        raise SCAError(f"{field} has NaN or infinite entries", field)
    return X


def consensus_operator(S, field: str = "consensus"):
    """Validate a consensus / similarity matrix and wrap it as an operator.

    S must be square, finite, nonnegative, symmetric within a relative
    tolerance, with a positive diagonal (each element is similar to itself;
    Sec. 2.2 needs the positive diagonal for full indecomposability).

    Returns
    -------
    DenseOperator or SparseOperator
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
    scale = float(values.max()) if values.size else 0.0
    asym = abs(S - S.T)
    worst = float(asym.max()) if asym.size else 0.0
    if worst > SYMMETRY_RTOL * max(scale, 1.0):
        raise SCAError(f"{field} is not symmetric (max |S - S^T| = {worst:g})", field)
    diag = S.diagonal()
    if np.any(diag <= 0):
        bad = int(np.flatnonzero(diag <= 0)[0])
        raise SCAError(f"{field} needs a positive diagonal; entry {bad} is {diag[bad]:g}", field)
    if sp.issparse(S):
        return SparseOperator((S + S.T) / 2)
    return DenseOperator((S + S.T) / 2)


def membership_matrix(labels, field: str = "labels") -> sp.csr_array:
    """The sparse 0/1 membership matrix H (n x K) of label runs.

    Parameters
    ----------
    labels : array-like of int, shape (n, r)
        One column per run; a negative label means the element was left out
        of that run (subsampled ensembles).  Labels need not be contiguous.
    """
    try:
        L = np.asarray(labels)
    except (TypeError, ValueError) as exc:
        raise SCAError(f"{field} must be an integer matrix: {exc}", field) from None
    if L.ndim == 1:
        L = L[:, None]
    if L.ndim != 2 or L.shape[0] < 2 or L.shape[1] < 1:
        raise SCAError(f"{field} must be n x r (elements x runs) with n >= 2, got {L.shape}", field)
    if L.dtype.kind == "f":
        if not np.all(np.isfinite(L)) or np.any(L != np.round(L)):
            raise SCAError(f"{field} must hold integers", field)
        L = L.astype(np.int64)
    elif L.dtype.kind not in "iu":
        raise SCAError(f"{field} must hold integers, got dtype {L.dtype}", field)
    n, r = L.shape
    index_dtype = np.int32 if n * r < 2**31 else np.int64
    runs = np.ascontiguousarray(L.T)  # one run per row: contiguous per-run passes
    columns = np.empty((r, n), dtype=index_dtype)
    offset = 0
    for j in range(r):
        present = runs[j] >= 0
        codes, used = _codes(runs[j], present)
        codes[present] += offset
        columns[j] = codes
        offset += used
    del runs
    if offset >= np.iinfo(index_dtype).max:
        columns = columns.astype(np.int64)
    columns = np.ascontiguousarray(columns.T)  # back to one row per element
    keep = columns >= 0
    counts = keep.sum(axis=1)
    if np.any(counts == 0):
        bad = int(np.flatnonzero(counts == 0)[0])
        raise SCAError(f"{field}: element {bad} is in no run", field)
    indptr = np.zeros(n + 1, dtype=columns.dtype)
    np.cumsum(counts, out=indptr[1:])
    indices = columns.ravel() if counts.min() == r else columns[keep]
    del keep
    H = sp.csr_array((np.ones(indices.size), indices, indptr), shape=(n, offset), copy=False)
    H.has_sorted_indices = True
    return H


def _codes(labels: np.ndarray, present: np.ndarray) -> tuple[np.ndarray, int]:
    """Labels renumbered 0..m-1 (m used labels); -1 where absent."""
    codes = np.full(labels.size, -1, dtype=np.int64)
    values = labels[present]
    if values.size and values.max() < 4 * labels.size:
        # small nonnegative labels: renumber by counting, O(n) instead of a sort
        used = np.bincount(values) > 0
        remap = np.cumsum(used) - 1
        codes[present] = remap[values]
        return codes, int(used.sum())
    uniq, codes[present] = np.unique(values, return_inverse=True)
    return codes, uniq.size


def membership_operator(labels, field: str = "labels") -> FactoredOperator:
    """Consensus of label runs as ``S = H H^T``: S_ij = runs sharing i and j."""
    return FactoredOperator(membership_matrix(labels, field))


def snn_operator(X, kappa: int, metric: str = "euclidean") -> FactoredOperator:
    """Shared-nearest-neighbour similarity (Sec. 4.3, "Using a single measure").

    ``s_ij = |N_i ∩ N_j|`` where ``N_g`` is ``g`` together with its ``kappa``
    nearest neighbours under ``metric``.  The paper writes ``|N_i ∪ N_j|``,
    but a union grows as i and j share *fewer* neighbours, which inverts the
    similarity; the intersection (the number of shared neighbours) is the
    measure of the cited work and the one used here.  Including ``g`` in its
    own neighbourhood gives ``s_ii = kappa + 1 > 0``.  With ``A`` the sparse
    neighbourhood indicator, ``S = A A^T``: a factored operator.
    """
    X = check_data(X)
    n = X.shape[0]
    if not isinstance(kappa, (int, np.integer)) or not 1 <= kappa < n:
        raise SCAError(f"snn kappa must be an integer in [1, n-1] = [1, {n - 1}], got {kappa!r}",
                       "snn.kappa")
    try:
        nn = NearestNeighbors(n_neighbors=int(kappa) + 1, metric=metric).fit(X)
    except ValueError as exc:
        raise SCAError(f"snn metric {metric!r}: {exc}", "snn.metric") from None
    _, neighbours = nn.kneighbors(X)
    rows = np.repeat(np.arange(n), kappa + 1)
    A = sp.csr_array((np.ones(rows.size), (rows, neighbours.ravel())), shape=(n, n))
    A.data[:] = 1.0  # an element listed twice (duplicate points) counts once
    A = A + sp.eye_array(n, format="csr")  # make sure g is in N_g
    A.data[:] = 1.0
    return FactoredOperator(A)
