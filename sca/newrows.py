"""The consensus row of a new element, from what each input kind gives of it.

:mod:`sca.placement` needs, for a new element, its similarities ``s`` to the
``n`` elements of a finished clustering and its self-similarity ``s_00``.
Each input kind gives them its own way (Meyer & Wessell, Sec. 1 and 4.4):

* label runs (and an ensemble on raw data, whose runs label the new row with
  the models they learned, :func:`sca.ensemble_models.ensemble_predict`): its label
  in each run picks one column of the membership matrix H per run, its row
  ``h`` of H, so ``s = H h`` (= ``h H^T``: the runs it shares with each
  element) and ``s_00`` the runs it is in, without forming S;
* shared nearest neighbours: its ``κ`` nearest neighbours among the job's
  elements ``N``; ``s_i = |N_i ∩ N|`` with the job's neighbourhoods ``N_i``
  kept, ``s_00 = κ + 1`` (itself and its neighbours);
* a consensus or similarity matrix: the row itself, and its diagonal entry.

Every function takes ``q`` new elements at once and returns ``(rows,
selfs)``: ``rows`` is ``n x q``, one element per column.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .ensemble_models import ensemble_predict
from .errors import SCAError
from .operators import label_spans

#: Largest K x q block of new elements' rows of H formed densely.
_DENSE_H_ENTRIES = 4_000_000


def run_columns(labels) -> tuple[np.ndarray, np.ndarray]:
    """The label each column of H stands for, and the runs' column offsets.

    Run j owns columns ``groups[j]:groups[j+1]`` of H in increasing label
    order, laid out as :func:`sca.inputs.membership_operator` lays them out:
    one per label ``0..spans[j]-1`` for the label operator
    (:func:`sca.operators.labels.label_spans`), else one per label the run uses (as
    :func:`sca.inputs.membership_factors` numbers them).

    Parameters
    ----------
    labels : array_like of int, shape (n, r) or (n,)
        The job's label runs, one column per run.

    Returns
    -------
    column_labels : ndarray of int64, shape (K,)
        The label each column of H stands for in its run.
    groups : ndarray of int64, shape (r + 1,)
        The runs' column offsets.
    """
    L = np.asarray(labels)
    L = L[:, None] if L.ndim == 1 else L
    spans = label_spans(L)
    if spans is not None:
        columns = [np.arange(span) for span in spans]
        return np.concatenate(columns).astype(np.int64), np.concatenate([[0], np.cumsum(spans)])
    columns, groups = [], [0]
    for j in range(L.shape[1]):
        used = np.unique(L[:, j][L[:, j] >= 0])
        columns.append(used)
        groups.append(groups[-1] + used.size)
    return np.concatenate(columns).astype(np.int64), np.asarray(groups, dtype=np.int64)


def ensemble_state(labels, models, groups, algorithms) -> dict[str, np.ndarray]:
    """What placing new rows of raw data needs of a fitted ensemble.

    The runs' models stacked (run j owns rows ``groups[j]:groups[j+1]``,
    :func:`sca.ensemble_models.stacked_models`), each run's algorithm, and the label
    each column of H stands for (:func:`run_columns` of the runs' ``labels``).

    Parameters
    ----------
    labels : array_like of int, shape (n, r)
        The runs' labels of the job's elements.
    models : array_like of shape (K, m)
        The runs' models stacked (k-means centres, NMF components,
        single-linkage subsamples: :func:`sca.ensemble.ensemble_model`).
    groups : array_like of int, shape (r + 1,)
        Run j owns rows ``groups[j]:groups[j+1]`` of ``models``.
    algorithms : sequence of str
        Each run's algorithm.

    Returns
    -------
    dict of str to ndarray
        ``models``, ``groups``, ``algorithms``, ``columns`` and
        ``column_groups`` (:func:`run_columns`).
    """
    columns, column_groups = run_columns(labels)
    return {
        "models": np.asarray(models),
        "groups": np.asarray(groups),
        "algorithms": np.array([str(algorithm) for algorithm in algorithms]),
        "columns": columns,
        "column_groups": column_groups,
    }


def ensemble_rows(A, state, X_new) -> tuple[np.ndarray, np.ndarray]:
    """New rows of raw data as consensus rows against a fitted ensemble.

    The rows are scaled as the ensemble's data was; each fitted run labels them
    (:func:`sca.ensemble_models.ensemble_predict`), then :func:`label_rows` gives
    their consensus rows against the membership matrix ``A``.

    Parameters
    ----------
    A : scipy.sparse array of shape (n, K)
        The job's membership matrix H.
    state : dict of str to ndarray
        The fitted ensemble's :func:`ensemble_state`.
    X_new : array_like of shape (q, m)
        The new rows.

    Returns
    -------
    rows : ndarray of shape (n, q)
        Each new element's similarities to the job's elements, one per column.
    selfs : ndarray of shape (q,)
        Each new element's self-similarity (the runs it is in).
    """
    runs = ensemble_predict(state["models"], state["groups"], state["algorithms"], X_new)
    return label_rows(A, state["columns"], state["column_groups"], runs)


def check_new_labels(new_labels, runs: int, field: str = "labels") -> np.ndarray:
    """New elements' labels, ``q x runs`` integers (negative: not in that run)."""
    try:
        L = np.asarray(new_labels)
    except (TypeError, ValueError) as exc:  # ragged
        raise SCAError(f"{field} must be integers, one per run: {exc}", field) from None
    L = L[None, :] if L.ndim == 1 else L
    if L.ndim != 2 or L.shape[1] != runs:
        raise SCAError(
            f"{field} needs one label per run of the job ({runs}), got shape {L.shape}", field
        )
    if (
        L.dtype.kind == "f"
        and np.all(np.isfinite(L))
        and np.all(L == np.round(L))
        and (not L.size or np.abs(L).max() <= 2.0**53)
    ):
        L = L.astype(np.int64)
    if L.dtype.kind not in "iu":
        raise SCAError(f"{field} must hold integers", field)
    return L.astype(np.int64)


def label_rows(
    H, column_labels, groups, new_labels, field: str = "labels"
) -> tuple[np.ndarray, np.ndarray]:
    """Consensus rows ``H h`` of new elements given by their label in each run.

    A label no element of the job has in that run (or a negative one) joins
    no column: the new element then shares that run with nobody.

    Parameters
    ----------
    H : scipy.sparse array of shape (n, K)
        The job's membership matrix.
    column_labels : ndarray of int, shape (K,)
        The label each column of H stands for (:func:`run_columns`).
    groups : ndarray of int, shape (r + 1,)
        The runs' column offsets (:func:`run_columns`).
    new_labels : array_like of int, shape (q, r) or (r,)
        Each new element's label in each run (negative: not in that run).
    field : str, default "labels"
        The name the errors give the input.

    Returns
    -------
    rows : ndarray of shape (n, q)
        ``s = H h``: the runs each new element shares with each job element.
    selfs : ndarray of shape (q,)
        ``s_00``: the runs each new element is in.

    Raises
    ------
    SCAError
        With ``field`` set to the given ``field`` when ``new_labels`` is not
        integers, one per run.
    """
    runs = groups.size - 1
    L = check_new_labels(new_labels, runs, field)
    q = L.shape[0]
    row_parts, col_parts = [], []
    for j in range(runs):
        lo, hi = groups[j], groups[j + 1]
        used = column_labels[lo:hi]
        pos = np.searchsorted(used, L[:, j])
        hit = (L[:, j] >= 0) & (pos < used.size)
        hit[hit] &= used[pos[hit]] == L[hit, j]
        row_parts.append(lo + pos[hit])
        col_parts.append(np.flatnonzero(hit))
    rows, cols = np.concatenate(row_parts), np.concatenate(col_parts)
    if H.shape[1] * q <= _DENSE_H_ENTRIES:  # a dense h makes H h one sparse-dense product
        h = np.zeros((H.shape[1], q))
        h[rows, cols] = 1.0
        S_rows = H @ h
    else:
        h = sp.csc_array((np.ones(rows.size), (rows, cols)), shape=(H.shape[1], q))
        S_rows = (H @ h).toarray()
    return np.asarray(S_rows, dtype=float), (L >= 0).sum(axis=1).astype(float)


def check_new_data(
    values, features: int, nonnegative: bool = False, field: str = "data[{i}]"
) -> np.ndarray:
    """New rows of raw data, ``q x features``, checked one by one.

    Each must be ``features`` finite numbers, and nonnegative when an NMF run
    labels them (``nonnegative``).  Raises :class:`SCAError` whose field is
    ``field`` formatted with the row's index ``i``.
    """
    rows = np.empty((len(values), features))
    for i, value in enumerate(values):
        where = field.format(i=i)
        try:
            row = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            raise SCAError("must be a list of numbers", where) from None
        if row.shape != (features,):
            raise SCAError(f"needs the job's {features} features, got shape {row.shape}", where)
        if not np.all(np.isfinite(row)):
            raise SCAError("has NaN or infinite entries", where)
        if nonnegative and row.min() < 0:
            raise SCAError(f"NMF needs nonnegative data; minimum {row.min():g}", where)
        rows[i] = row
    return rows


def neighbour_index(X, metric: str = "euclidean"):
    """The nearest-neighbour index of a job's (scaled) data ``X`` that
    :func:`neighbour_rows` queries: a fitted
    :class:`sklearn.neighbors.NearestNeighbors`."""
    from sklearn.neighbors import NearestNeighbors  # scikit-learn loads when rows are placed

    return NearestNeighbors(metric=metric).fit(X)


def neighbour_rows(index, A, X_new, kappa: int) -> tuple[np.ndarray, np.ndarray]:
    """Consensus rows of new elements under shared nearest neighbours.

    ``s_i = |N_i ∩ N|`` with ``N`` the new element's ``kappa`` nearest
    neighbours among the job's elements and ``N_i`` the job's neighbourhoods;
    ``s_00 = kappa + 1`` (itself and its neighbours).

    Parameters
    ----------
    index : sklearn.neighbors.NearestNeighbors
        Fitted on the job's data (:func:`neighbour_index`).
    A : scipy.sparse array of shape (n, n)
        The job's neighbourhood matrix (row i is ``N_i``,
        :func:`sca.inputs.snn_operator`).
    X_new : array_like of shape (q, m)
        The new rows, scaled as the job's data was.
    kappa : int
        The neighbours of each element (κ).

    Returns
    -------
    rows : ndarray of shape (n, q)
        Each new element's similarities to the job's elements, one per column.
    selfs : ndarray of shape (q,)
        Each new element's self-similarity, ``kappa + 1``.
    """
    _, near = index.kneighbors(np.asarray(X_new, dtype=float), n_neighbors=int(kappa))
    q, n = near.shape[0], A.shape[0]
    N = sp.csc_array(
        (np.ones(near.size), (near.ravel(), np.repeat(np.arange(q), kappa))), shape=(n, q)
    )
    N.data[:] = 1.0
    return np.asarray((A @ N).toarray(), dtype=float), np.full(q, float(kappa) + 1.0)


def consensus_rows(
    rows, selfs, n: int, default_self: float, field: str = "consensus"
) -> tuple[np.ndarray, np.ndarray]:
    """New elements' similarity rows, checked: ``q x n`` in, ``n x q`` out.

    Parameters
    ----------
    rows : array_like of shape (q, n) or (n,)
        Each new element's similarities to the job's n elements.
    selfs : sequence of float or None
        Each new element's self-similarity; None entries default to
        ``default_self``.
    n : int
        The number of elements of the job.
    default_self : float
        The self-similarity of an element given None.
    field : str, default "consensus"
        The name the errors give the input.

    Returns
    -------
    rows : ndarray of shape (n, q)
        The rows as columns.
    selfs : ndarray of shape (q,)
        The self-similarities.

    Raises
    ------
    SCAError
        With ``field`` set to the given ``field`` when a row is not n finite
        nonnegative numbers or a self-similarity is not positive.
    """
    try:
        R = np.asarray(rows, dtype=float)
    except (TypeError, ValueError) as exc:
        raise SCAError(f"{field} must be a row of {n} numbers: {exc}", field) from None
    R = R[None, :] if R.ndim == 1 else R
    if R.ndim != 2 or R.shape[1] != n:
        raise SCAError(
            f"{field} needs one similarity per element of the job ({n}), got shape {R.shape}", field
        )
    if not np.all(np.isfinite(R)) or (R.size and R.min() < 0):
        raise SCAError(f"{field} must hold finite nonnegative similarities", field)
    out = np.array([default_self if v is None else float(v) for v in selfs], dtype=float)
    if out.shape != (R.shape[0],) or not np.all(np.isfinite(out)) or np.any(out <= 0):
        raise SCAError(f"{field}: self-similarities must be positive numbers", field)
    return np.ascontiguousarray(R.T), out


def consensus_rows_each(
    rows, selfs, n: int, default_self: float, field: str = "consensus[{i}]"
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`consensus_rows` of new elements checked one by one, so that a fault
    names its element (``field`` formatted with its index ``i``)."""
    columns, out = [], []
    for i, (row, own) in enumerate(zip(rows, selfs)):
        column, s00 = consensus_rows([row], [own], n, default_self, field.format(i=i))
        columns.append(column)
        out.append(s00[0])
    return np.hstack(columns) if columns else np.empty((n, 0)), np.asarray(out, dtype=float)
