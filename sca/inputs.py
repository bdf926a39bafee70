"""Inputs that reach the consensus operator (Meyer & Wessell, Sec. 1 and 4.4).

* a precomputed consensus or similarity matrix S, dense or sparse;
* ensemble label runs, giving the factored form S = H H^T;
* raw data plus an ensemble spec (:mod:`sca.ensemble` runs k-means / NMF);
* raw data and the shared-nearest-neighbour measure ("Using a single measure").

Raw data's columns are scaled first (the ``scale`` option, :func:`fit_scaling`).

Validation happens here, once, at the boundary; the stages assume it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import scipy.sparse as sp

from .errors import SCAError
from .operators import (
    DenseOperator,
    FactoredOperator,
    FactorOperator,
    SparseOperator,
    chunked_label_operator,
    is_dask,
    label_operator,
)
from .options import SCALINGS, SNN_METRICS

#: Relative tolerance for the symmetry check of a user's matrix.
SYMMETRY_RTOL = 1e-8
#: The largest sum of a consensus's entries: its total, and S + S^T when it is
#: symmetrised, must stay finite in float64 for balancing and σ.
MAX_CONSENSUS_SUM = np.finfo(float).max / 2
_BLOCK_ENTRIES = 4_000_000
_LABEL_BLOCK_ROWS = 1 << 16
#: Float labels must be integers that float64 holds exactly.
_MAX_FLOAT_LABEL = 2.0**53


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


def column_scaler(how: str = "standard", centre: bool = True):
    """An unfitted scikit-learn transformer for the ``scale`` option.

    ``"standard"``: :class:`~sklearn.preprocessing.StandardScaler` (each
    column centred and divided by its standard deviation; a constant column
    only centred), so that no feature dominates the ensemble's distances by
    its unit alone.  ``"none"``: the identity.  New elements
    (:mod:`sca.placement`) are transformed with the scaler fitted on the data
    they join, never refitted on themselves.  ``centre=False`` only divides
    (data that must stay nonnegative, see :func:`fit_scaling`).
    """
    # scikit-learn loads when raw data is scaled, not when sca is imported
    from sklearn.preprocessing import FunctionTransformer, StandardScaler

    if how not in SCALINGS:
        raise SCAError(f"scale must be one of {SCALINGS}, got {how!r}", "options.scale")
    return StandardScaler(with_mean=centre) if how == "standard" else FunctionTransformer()


@dataclass(frozen=True, eq=False)
class Scaling:
    """The ``scale`` option fitted on a job's raw data: ``(X - centre) / spread``.

    Kept with the clustering (:meth:`arrays`), so that new elements are
    transformed as the data they join was, never refitted on themselves.
    """

    centre: np.ndarray
    spread: np.ndarray

    def transform(self, X) -> np.ndarray:
        """Rows of raw data (``m`` features each) as the ensemble or SNN saw the job's."""
        return (np.asarray(X, dtype=float) - self.centre) / self.spread

    def arrays(self) -> dict[str, np.ndarray]:
        return {"centre": self.centre, "spread": self.spread}

    @classmethod
    def from_arrays(cls, arrays) -> Scaling:
        return cls(np.asarray(arrays["centre"], dtype=float), np.asarray(arrays["spread"], float))


def fit_scaling(X, how: str = "standard", centre: bool = True) -> Scaling:
    """The ``scale`` option (:func:`column_scaler`) fitted on checked raw data X.

    ``centre=False`` divides the columns without centring them: for NMF
    runs, which need nonnegative data (:func:`sca.ensemble.needs_nonnegative`);
    k-means, the other algorithm, is blind to a shift.
    """
    m = X.shape[1]
    if how == "none":
        column_scaler(how)  # the check of the option's value
        return Scaling(np.zeros(m), np.ones(m))
    scaler = column_scaler(how, centre=centre).fit(X)
    return Scaling(scaler.mean_ if centre else np.zeros(m), np.asarray(scaler.scale_, dtype=float))


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


def check_snn(X, kappa, metric: str = "euclidean") -> np.ndarray:
    """Validate data and parameters of the shared-nearest-neighbour measure."""
    X = check_data(X)
    n = X.shape[0]
    if not isinstance(kappa, (int, np.integer)) or isinstance(kappa, bool) or not 1 <= kappa < n:
        raise SCAError(
            f"snn kappa must be an integer in [1, n-1] = [1, {n - 1}], got {kappa!r}", "snn.kappa"
        )
    if metric not in SNN_METRICS:
        raise SCAError(f"snn metric must be one of {SNN_METRICS}, got {metric!r}", "snn.metric")
    return X


def snn_operator(X, kappa: int, metric: str = "euclidean") -> FactoredOperator:
    """Shared-nearest-neighbour similarity (Sec. 4.4, "Using a single measure").

    ``s_ij = |N_i ∩ N_j|`` where ``N_g`` is ``g`` together with its ``kappa``
    nearest neighbours under ``metric``.  The paper writes ``|N_i ∪ N_j|``,
    but a union grows as i and j share *fewer* neighbours, which inverts the
    similarity; the intersection (the number of shared neighbours) is the
    measure of the cited work and the one used here.  Including ``g`` in its
    own neighbourhood gives ``s_ii = kappa + 1 > 0``.  With ``A`` the sparse
    neighbourhood indicator, ``S = A A^T``: a factored operator.

    Parameters
    ----------
    X : array_like of shape (n, m)
        The raw data, one row per element.
    kappa : int
        The neighbours of each element (κ), ``1 <= kappa < n``.
    metric : str, default "euclidean"
        The distance of the neighbours (a metric of
        :class:`sklearn.neighbors.NearestNeighbors`).

    Returns
    -------
    FactoredOperator
        ``S = A A^T`` with ``A`` the ``n x n`` neighbourhood indicator.

    Raises
    ------
    SCAError
        When ``X`` is not finite numeric data (``field="data"``), ``kappa`` is
        out of range (``"snn.kappa"``) or ``metric`` unknown (``"snn.metric"``).

    References
    ----------
    .. [1] C. D. Meyer and C. D. Wessell, Stochastic Data Clustering, Sec. 4.4.
    """
    from sklearn.neighbors import NearestNeighbors

    X = check_snn(X, kappa, metric)
    n = X.shape[0]
    _, neighbours = NearestNeighbors(n_neighbors=int(kappa) + 1, metric=metric).fit(X).kneighbors(X)
    rows = np.repeat(np.arange(n), kappa + 1)
    A = sp.csr_array((np.ones(rows.size), (rows, neighbours.ravel())), shape=(n, n))
    A.data[:] = 1.0  # an element listed twice (duplicate points) counts once
    A = A + sp.eye_array(n, format="csr")  # make sure g is in N_g
    A.data[:] = 1.0
    return FactoredOperator(A)


class Similarity(NamedTuple):
    """An input kind that is a similarity in itself: how to check it without
    building its operator (returning the checked array, n rows first) and
    how to build that operator."""

    check: Callable[..., Any]
    operator: Callable[..., Any]


#: The input kinds that give S directly, by name (:data:`sca.options.INPUTS`):
#: a consensus matrix (Sec. 2.2) and label runs (S = H H^T, Sec. 3).  Raw data
#: reaches S through an ensemble or the SNN (:mod:`sca.pipeline.source`).
SIMILARITIES = {
    "consensus": Similarity(check_consensus, consensus_operator),
    "labels": Similarity(check_labels, membership_operator),
}
