"""Ensemble label runs and their consensus ``S = H H^T`` (Meyer & Wessell, Sec. 1 and 3).

Checked (an ``n x r`` integer matrix, every element in some run), then the
label matrix itself is the operator where it can be
(:mod:`sca.operators.labels`, :mod:`sca.operators.chunked`), else the sparse
membership matrix H is built.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..errors import SCAError
from ..operators import (
    FactoredOperator,
    FactorOperator,
    chunked_label_operator,
    is_dask,
    label_operator,
)

_LABEL_BLOCK_ROWS = 1 << 16
#: Float labels must be integers that float64 holds exactly.
_MAX_FLOAT_LABEL = 2.0**53


def check_labels(labels, field: str = "labels") -> np.ndarray:
    """Validate label runs: an ``n x r`` integer matrix (n >= 2), every element
    in at least one run (negative = left out of that run).  Returns it as ints."""
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
        if L.size and np.abs(L).max() > _MAX_FLOAT_LABEL:
            raise SCAError(
                f"{field} holds {np.abs(L).max():g}: labels given as floats must lie "
                f"within ±2^53, where every integer is exact",
                field,
            )
        L = L.astype(np.int64)
    elif L.dtype.kind == "u" and L.size and L.max() > np.iinfo(np.int64).max:
        raise SCAError(f"{field} holds {L.max()}, beyond the int64 labels", field)
    elif L.dtype.kind not in "iu":
        raise SCAError(f"{field} must hold integers, got dtype {L.dtype}", field)
    if L.size and L.min() < 0:
        for lo in range(0, L.shape[0], _LABEL_BLOCK_ROWS):
            clustered = np.any(L[lo : lo + _LABEL_BLOCK_ROWS] >= 0, axis=1)
            if not np.all(clustered):
                bad = lo + int(np.flatnonzero(~clustered)[0])
                raise SCAError(f"{field}: element {bad} is in no run", field)
    return L


def membership_matrix(labels, field: str = "labels") -> sp.csr_array:
    """The sparse 0/1 membership matrix H (n x K) of label runs.

    H has one column per cluster of each run, so that ``S = H H^T`` is the
    consensus of the runs (Sec. 1).

    Parameters
    ----------
    labels : array-like of int, shape (n, r)
        One column per run; a negative label means the element was left out
        of that run (subsampled ensembles).  Labels need not be contiguous.
    field : str, default "labels"
        The name the errors give the input.

    Returns
    -------
    scipy.sparse.csr_array of shape (n, K)
        H, with the columns of run j after those of runs ``0 .. j - 1``.

    Raises
    ------
    SCAError
        With ``field`` set to the given ``field`` when ``labels`` is not an
        ``n x r`` integer matrix (n >= 2) with every element in some run.
    """
    return membership_factors(labels, field)[0]


def membership_factors(labels, field: str = "labels") -> tuple[sp.csr_array, np.ndarray]:
    """H (:func:`membership_matrix`) and its run offsets: run j owns columns
    ``groups[j]:groups[j+1]`` of H."""
    L = check_labels(labels, field)
    n, r = L.shape
    index_dtype = np.int32 if n * r < 2**31 else np.int64
    runs = np.ascontiguousarray(L.T)  # one run per row: contiguous per-run passes
    columns = np.empty((r, n), dtype=index_dtype)
    offset = 0
    groups = np.zeros(r + 1, dtype=np.int64)
    for j in range(r):
        present = runs[j] >= 0
        codes, used = _codes(runs[j], present)
        codes[present] += offset
        columns[j] = codes
        offset += used
        groups[j + 1] = offset
    del runs
    if offset >= np.iinfo(index_dtype).max:
        columns = columns.astype(np.int64)
    columns = np.ascontiguousarray(columns.T)  # back to one row per element
    keep = columns >= 0
    counts = keep.sum(axis=1)
    indptr = np.zeros(n + 1, dtype=columns.dtype)
    np.cumsum(counts, out=indptr[1:])
    indices = columns.ravel() if counts.min() == r else columns[keep]
    del keep
    H = sp.csr_array((np.ones(indices.size), indices, indptr), shape=(n, offset), copy=False)
    H.has_sorted_indices = True
    return H, groups


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


def membership_operator(labels, field: str = "labels") -> FactorOperator:
    """Consensus of label runs as ``S = H H^T``: S_ij = runs sharing i and j.

    With every element in every run, the label matrix itself is the operator
    (:class:`sca.operators.labels.LabelOperator`; a Dask array stays one); otherwise
    (subsampled runs, labels far apart) the sparse H is built.

    Parameters
    ----------
    labels : array-like of int, shape (n, r), or dask.array.Array
        One column per run; a negative label means the element was left out
        of that run.
    field : str, default "labels"
        The name the errors give the input.

    Returns
    -------
    FactorOperator
        A :class:`~sca.operators.labels.LabelOperator` or a :class:`FactoredOperator`.

    Raises
    ------
    SCAError
        With ``field`` set to the given ``field`` when ``labels`` is not an
        ``n x r`` integer matrix (n >= 2) with every element in some run, or is
        a Dask array with some element left out of a run.

    See Also
    --------
    ensemble_labels : Label runs of raw data.

    References
    ----------
    .. [1] C. D. Meyer and C. D. Wessell, Stochastic Data Clustering, Sec. 1
       (the consensus matrix).
    """
    if is_dask(labels):
        chunked = chunked_label_operator(labels)
        if chunked is None:
            raise SCAError(
                f"{field}: a Dask label matrix needs every element in every run, "
                "with labels 0, 1, ... (not much more than n in all)",
                field,
            )
        return chunked
    L = check_labels(labels, field)
    op = label_operator(L)
    if op is not None:
        return op
    H, groups = membership_factors(L, field)
    return FactoredOperator(H, groups=groups)
